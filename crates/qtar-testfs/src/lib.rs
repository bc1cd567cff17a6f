//! Test support: real ext4, XFS and btrfs file systems mounted from loop
//! images, and the rule for privileged tests (run as root; otherwise skip with
//! a printed reason, except that under `CI=true` a skip is a failure).
#![forbid(unsafe_code)]
#![deny(missing_docs)]

use std::path::{Path, PathBuf};
use std::process::Command;

/// Whether we run as root.
pub fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| s.lines().find(|l| l.starts_with("Uid:")).map(|l| l.split_whitespace().nth(1) == Some("0")))
        .unwrap_or(false)
}

/// Skips the calling test with `reason` (returns true), or panics under `CI=true`.
pub fn skip(reason: &str) -> bool {
    if std::env::var("CI").as_deref() == Ok("true") {
        panic!("a privileged test cannot run under CI=true: {reason}");
    }
    eprintln!("SKIP: {reason}");
    true
}

/// `true` when the test must skip because it needs root (after printing why).
pub fn need_root(what: &str) -> bool {
    !is_root() && skip(&format!("{what} needs root (loop devices, mounts)"))
}

/// `true` when `tool` is missing (after printing why, or panicking under CI).
pub fn need_tool(tool: &str) -> bool {
    let found = Command::new("sh")
        .arg("-c")
        .arg(format!("command -v {tool}"))
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false);
    !found && skip(&format!("{tool} is not installed"))
}

/// Runs a command and panics with its output if it fails.
pub fn run(cmd: &mut Command) -> String {
    let out = cmd.output().unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
    assert!(
        out.status.success(),
        "{cmd:?} failed: {}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A scratch directory on the build's file system (under `target/`), never
/// tmpfs, so FIEMAP works.
pub fn scratch() -> tempfile::TempDir {
    let base = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/scratch");
    std::fs::create_dir_all(&base).unwrap();
    // A canonical path: no `..` for archivers to strip from member names.
    tempfile::tempdir_in(base.canonicalize().unwrap()).unwrap()
}

/// A file system of type `fstype` (`ext4`, `xfs`, `btrfs`) made in an image
/// file and mounted on a loop device; unmounted and detached on drop.
pub struct LoopFs {
    dir: tempfile::TempDir,
    mnt: PathBuf,
    dev: String,
    mounted: bool,
}

impl LoopFs {
    /// Makes and mounts a `size_mib` MiB file system. Call only as root.
    pub fn new(fstype: &str, size_mib: u64) -> Self {
        Self::with_mkfs_args(fstype, size_mib, &[])
    }

    /// Like [`LoopFs::new`], with extra arguments to `mkfs`.
    pub fn with_mkfs_args(fstype: &str, size_mib: u64, args: &[&str]) -> Self {
        let dir = scratch();
        let img = dir.path().join("fs.img");
        let f = std::fs::File::create(&img).unwrap();
        f.set_len(size_mib << 20).unwrap();
        drop(f);
        let mut mkfs = Command::new(format!("mkfs.{fstype}"));
        match fstype {
            "ext4" | "ext3" | "ext2" => {
                mkfs.args(["-q", "-F"]);
            }
            "xfs" | "btrfs" => {
                mkfs.args(["-q", "-f"]);
            }
            _ => {}
        }
        mkfs.args(args).arg(&img);
        run(&mut mkfs);
        let dev = run(Command::new("losetup").args(["-f", "--show"]).arg(&img)).trim().to_string();
        let mnt = dir.path().join("mnt");
        std::fs::create_dir(&mnt).unwrap();
        let mut fs = Self { dir, mnt, dev, mounted: false };
        run(Command::new("mount").arg(&fs.dev).arg(&fs.mnt));
        fs.mounted = true;
        fs
    }

    /// The mount point.
    pub fn path(&self) -> &Path {
        &self.mnt
    }

    /// The loop device (`/dev/loopN`).
    pub fn device(&self) -> &str {
        &self.dev
    }

    /// The image file.
    pub fn image(&self) -> PathBuf {
        self.dir.path().join("fs.img")
    }

    /// Unmounts and mounts again with `opts` (e.g. `ro,noload`), which also
    /// drops the file system's caches.
    pub fn remount(&mut self, opts: &str) {
        run(Command::new("umount").arg(&self.mnt));
        run(Command::new("mount").args(["-o", opts]).arg(&self.dev).arg(&self.mnt));
    }
}

impl Drop for LoopFs {
    fn drop(&mut self) {
        if self.mounted {
            let _ = Command::new("umount").arg(&self.mnt).status();
        }
        let _ = Command::new("losetup").args(["-d", &self.dev]).status();
    }
}
