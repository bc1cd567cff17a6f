//! Flags, checked against GNU tar run on the same tree with the same flags:
//! with `--sort=name` the archives must be the same bytes.

use std::path::Path;
use std::process::Command;

use super::common::*;

fn tree(root: &Path) {
    for (p, d) in [
        ("one/a.c", "int a;"),
        ("one/a.o", "obj"),
        ("one/sub/b.txt", "b"),
        ("one/.git/config", "vcs"),
        ("two/c", "c"),
        ("two/d.o", "obj"),
        ("three/e", "e"),
    ] {
        let f = root.join(p);
        std::fs::create_dir_all(f.parent().unwrap()).unwrap();
        std::fs::write(&f, d).unwrap();
    }
}

/// Runs qtar and GNU tar with `--sort=name` and the same arguments; returns
/// (qtar archive, GNU archive, qtar stderr, GNU stderr).
fn both(dir: &Path, args: &[&str]) -> (Vec<u8>, Vec<u8>, String, String) {
    let mut res = Vec::new();
    for (name, mut cmd) in [("q", qtar()), ("g", Command::new("tar"))] {
        let file = dir.join(format!("{name}.tar"));
        let o = out(cmd.current_dir(dir).arg("--sort=name").arg("-cf").arg(&file).args(args));
        assert!(o.status.success(), "{name} {args:?}: {}", stderr(&o));
        res.push((std::fs::read(&file).unwrap(), stderr(&o)));
    }
    let (g, q) = (res.pop().unwrap(), res.pop().unwrap());
    (q.0, g.0, q.1, g.1)
}

fn assert_same_archive(dir: &Path, args: &[&str]) {
    let (q, g, qe, ge) = both(dir, args);
    assert!(
        q == g,
        "{args:?}: qtar's archive differs from GNU tar's ({} vs {} bytes)\nqtar stderr: {qe}\nGNU stderr: {ge}",
        q.len(),
        g.len()
    );
}

#[test]
fn directory_files_from_and_exclusions_match_gnu_tar() {
    let w = scratch();
    tree(w.path());
    std::fs::write(w.path().join("list"), "two\nthree/e\n").unwrap();
    std::fs::write(w.path().join("list0"), "two\0three\0").unwrap();
    assert_same_archive(w.path(), &["one", "two"]);
    assert_same_archive(w.path(), &["--exclude=*.o", "one", "two"]);
    assert_same_archive(w.path(), &["--exclude-vcs", "--exclude=sub", "one"]);
    assert_same_archive(w.path(), &["-C", "one", "sub", "a.c", "-C", "../two", "c"]);
    assert_same_archive(w.path(), &["-T", "list", "one/a.c"]);
    assert_same_archive(w.path(), &["--null", "-T", "list0"]);
}

#[test]
fn owner_group_mtime_and_formats_match_gnu_tar() {
    let w = scratch();
    tree(w.path());
    assert_same_archive(w.path(), &["--owner=bin:2", "--group=daemon:1", "one"]);
    assert_same_archive(w.path(), &["--numeric-owner", "one"]);
    assert_same_archive(w.path(), &["--mtime=@1000000000", "one"]);
    assert_same_archive(w.path(), &["--mtime=2001-09-09 01:46:40", "one"]);
    assert_same_archive(w.path(), &["--format=ustar", "one"]);
    assert_same_archive(w.path(), &["--format=oldgnu", "one"]);
    assert_same_archive(w.path(), &["--format=v7", "one"]);
    assert_same_archive(w.path(), &["-b", "7", "one"]);
}

#[test]
fn checkpoints_and_totals_match_gnu_tar() {
    let w = scratch();
    tree(w.path());
    std::fs::write(w.path().join("two/big"), vec![7u8; 300_000]).unwrap();
    let (_, _, qe, ge) = both(w.path(), &["--checkpoint=3", "two"]);
    let cp = |s: &str| {
        s.lines()
            .filter(|l| l.contains("Write checkpoint"))
            .map(|l| l.split(':').nth(1).unwrap().to_string())
            .collect::<Vec<_>>()
    };
    assert!(!cp(&ge).is_empty());
    assert_eq!(cp(&qe), cp(&ge));
    let (_, _, qe, ge) = both(w.path(), &["--totals", "two"]);
    let bytes = |s: &str| {
        s.lines()
            .find_map(|l| l.strip_prefix("Total bytes written: "))
            .map(|r| r.split(' ').next().unwrap().to_string())
    };
    assert!(bytes(&ge).is_some(), "{ge}");
    assert_eq!(bytes(&qe), bytes(&ge));
}

#[test]
fn compression_filters_wrap_the_same_archive() {
    let w = scratch();
    tree(w.path());
    let plain = w.path().join("plain.tar");
    let o = out(qtar().current_dir(w.path()).args(["--sort=name", "-cf"]).arg(&plain).arg("one"));
    assert!(o.status.success());
    let plain = std::fs::read(plain).unwrap();
    for (flag, tool) in [("-z", "gzip"), ("-j", "bzip2"), ("-J", "xz"), ("--zstd", "zstd")] {
        if need_tool(tool) {
            continue;
        }
        let f = w.path().join(format!("c.tar.{tool}"));
        let o = out(qtar().current_dir(w.path()).args(["--sort=name", flag, "-cf"]).arg(&f).arg("one"));
        assert!(o.status.success(), "{flag}: {}", stderr(&o));
        let d = out(Command::new(tool).arg("-dc").arg(&f));
        assert!(d.status.success(), "{tool} -dc: {}", stderr(&d));
        assert!(d.stdout == plain, "{flag}: the decompressed stream is the plain archive");
        // GNU tar recognises the compression by itself.
        let l = out(Command::new("tar").arg("-tf").arg(&f));
        assert!(l.status.success(), "tar -tf {flag}: {}", stderr(&l));
    }
}

#[test]
fn verbose_lists_what_gnu_tar_lists() {
    let w = scratch();
    tree(w.path());
    let mut lists = Vec::new();
    for mut cmd in [qtar(), Command::new("tar")] {
        let o = out(cmd.current_dir(w.path()).args(["--sort=name", "-cvf", "x.tar", "one", "two"]));
        assert!(o.status.success());
        let mut l: Vec<String> = String::from_utf8_lossy(&o.stdout).lines().map(String::from).collect();
        l.sort();
        lists.push(l);
    }
    assert_eq!(lists[0], lists[1]);
    // To standard output, the listing goes to stderr.
    let o = out(qtar().current_dir(w.path()).args(["-cvf", "-", "two"]));
    assert!(o.status.success());
    assert!(stderr(&o).contains("two/c\n"), "{}", stderr(&o));
}

#[test]
fn version_reads_like_gnu_tar_when_called_tar() {
    let o = out(Command::new("bash").args(["-c", &format!("exec -a tar {} --version", env!("CARGO_BIN_EXE_qtar"))]));
    assert!(o.status.success());
    assert_eq!(String::from_utf8_lossy(&o.stdout).lines().next(), Some("tar (GNU tar) 1.34"));
}

#[test]
fn usage_errors_exit_2() {
    let o = out(qtar().arg("-c"));
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("Cowardly refusing to create an empty archive"), "{}", stderr(&o));
    let o = out(qtar().args(["-c", "-t", "x"]));
    assert_eq!(o.status.code(), Some(2));
    let o = out(qtar().args(["-cf", "x.tar", "--format=bogus", "x"]));
    assert_eq!(o.status.code(), Some(2));
}
