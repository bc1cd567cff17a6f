//! GNU tar 1.34's own testsuite, run against the `qtar` binary of this
//! package by `tests/gnu-tar/run.sh` (see `tests/gnu-tar/README.md`).
//!
//! The run takes minutes, installs apt packages when root and downloads
//! Debian's tar source, so it runs only when `CI=true` or `QTAR_GNUSUITE=1`;
//! otherwise it prints why it skipped.
#![forbid(unsafe_code)]

use std::path::Path;
use std::process::Command;

#[test]
fn gnu_tar_testsuite() {
    let ci = std::env::var("CI").is_ok_and(|v| v == "true");
    let asked = std::env::var("QTAR_GNUSUITE").is_ok_and(|v| v == "1");
    if !ci && !asked {
        eprintln!(
            "skipped gnu_tar_testsuite: set QTAR_GNUSUITE=1 to run GNU tar's testsuite \
             against qtar (tests/gnu-tar/run.sh; it always runs when CI=true)"
        );
        return;
    }
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/gnu-tar/run.sh");
    let qtar = env!("CARGO_BIN_EXE_qtar");
    let mut cmd = Command::new("bash");
    if std::env::var_os("QTAR_GNUSUITE_CACHE").is_none() {
        // The suite runs as `nobody` when started as root: keep its build
        // where that user can reach it, wherever the checkout is.
        cmd.env("QTAR_GNUSUITE_CACHE", "/var/tmp/qtar-gnu-tar-suite");
    }
    let status = cmd
        .arg(&script)
        .arg("--qtar")
        .arg(qtar)
        .status()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", script.display()));
    assert!(
        status.success(),
        "{} --qtar {qtar} failed ({status}): see its output above and \
         target/gnu-tar-suite/results/",
        script.display()
    );
}
