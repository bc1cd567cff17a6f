//! Small helpers around the system tools the lab drives: running commands
//! with their errors named, loop devices, mounts and the page cache.
//!
//! Every loop device and mount made here is owned by a guard that undoes it
//! on drop, so a failed run leaves nothing behind; a guard only ever detaches
//! the loop device it attached itself.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use anyhow::{Context, Result, bail};

/// Runs a command, failing with its command line, exit status and stderr.
pub fn run(cmd: &mut Command) -> Result<Output> {
    let out = cmd.output().with_context(|| format!("running {cmd:?}"))?;
    if !out.status.success() {
        bail!("{cmd:?} failed ({}): {}", out.status, String::from_utf8_lossy(&out.stderr).trim());
    }
    Ok(out)
}

/// Runs a shell command line with `sh -c`, failing like [`run`].
pub fn sh(line: &str) -> Result<Output> {
    run(Command::new("sh").arg("-c").arg(line))
}

/// True when running as root (privileged lab steps need it).
pub fn is_root() -> bool {
    rustix::process::geteuid().is_root()
}

/// Gate for privileged tests: returns true when root. Otherwise prints why
/// the test is skipped and returns false, or panics when `CI=true`, because
/// CI must not pass by skipping.
pub fn require_root(test: &str) -> bool {
    if is_root() {
        return true;
    }
    if std::env::var("CI").as_deref() == Ok("true") {
        panic!("{test}: needs root (loop devices, mounts, tracefs) and CI=true forbids skipping");
    }
    eprintln!("SKIP {test}: needs root (loop devices, mounts, tracefs)");
    false
}

/// `sync` then `echo 3 > /proc/sys/vm/drop_caches`: drops the loop device's
/// and the image file's cached pages.
pub fn drop_caches() -> Result<()> {
    run(&mut Command::new("sync"))?;
    std::fs::write("/proc/sys/vm/drop_caches", "3").context("/proc/sys/vm/drop_caches: writing 3")?;
    Ok(())
}

/// A loop device attached by this process; detached on drop.
#[derive(Debug)]
pub struct Loop {
    /// The device node, e.g. `/dev/loop4`.
    pub dev: PathBuf,
}

impl Loop {
    /// Attaches `image` to a free loop device (`losetup -f --show`).
    pub fn attach(image: &Path, read_only: bool) -> Result<Loop> {
        let mut c = Command::new("losetup");
        c.arg("-f").arg("--show");
        if read_only {
            c.arg("-r");
        }
        c.arg(image);
        let out = run(&mut c).with_context(|| format!("{}: attaching a loop device", image.display()))?;
        let dev = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
        Ok(Loop { dev })
    }
}

impl Drop for Loop {
    fn drop(&mut self) {
        let _ = Command::new("losetup").arg("-d").arg(&self.dev).status();
    }
}

/// A mount made by this process; unmounted on drop.
#[derive(Debug)]
pub struct Mount {
    /// The mount point.
    pub dir: PathBuf,
}

impl Mount {
    /// `mount [-t fstype] [-o opts] source dir`.
    pub fn new(source: &Path, dir: &Path, fstype: Option<&str>, opts: &str) -> Result<Mount> {
        std::fs::create_dir_all(dir).with_context(|| format!("{}: creating mount point", dir.display()))?;
        let mut c = Command::new("mount");
        if let Some(t) = fstype {
            c.args(["-t", t]);
        }
        if !opts.is_empty() {
            c.args(["-o", opts]);
        }
        c.arg(source).arg(dir);
        run(&mut c).with_context(|| format!("{}: mounting {}", dir.display(), source.display()))?;
        Ok(Mount { dir: dir.to_path_buf() })
    }

    /// Unmounts now, reporting failure.
    pub fn unmount(self) -> Result<()> {
        let dir = self.dir.clone();
        std::mem::forget(self);
        run(Command::new("umount").arg(&dir)).with_context(|| format!("{}: unmounting", dir.display()))?;
        Ok(())
    }
}

impl Drop for Mount {
    fn drop(&mut self) {
        if !Command::new("umount").arg(&self.dir).status().is_ok_and(|s| s.success()) {
            let _ = Command::new("umount").arg("-l").arg(&self.dir).status();
        }
    }
}

/// Makes an ext4 file system in a file of `size` bytes (`mkfs.ext4 -F -q -m 0`
/// plus `extra` options), replacing any old file.
pub fn mkfs_ext4(image: &Path, size: u64, extra: &[&str]) -> Result<()> {
    let _ = std::fs::remove_file(image);
    let f = std::fs::File::create(image).with_context(|| format!("{}: creating image", image.display()))?;
    f.set_len(size).with_context(|| format!("{}: sizing image", image.display()))?;
    drop(f);
    run(Command::new("mkfs.ext4").args(["-F", "-q", "-m", "0"]).args(extra).arg(image))?;
    Ok(())
}

/// Usable bytes of the file system mounted at `dir` (statvfs blocks × frsize;
/// ext4 already leaves its metadata out of this).
pub fn fs_capacity(dir: &Path) -> Result<u64> {
    let s = rustix::fs::statvfs(dir).with_context(|| format!("{}: statvfs", dir.display()))?;
    Ok(s.f_blocks * s.f_frsize)
}

/// Bytes in use on the file system mounted at `dir`.
pub fn fs_used(dir: &Path) -> Result<u64> {
    let s = rustix::fs::statvfs(dir).with_context(|| format!("{}: statvfs", dir.display()))?;
    Ok((s.f_blocks - s.f_bfree) * s.f_frsize)
}
