//! Opening and stat-ing without updating access times.

use std::io;
use std::os::fd::{AsFd, OwnedFd};
use std::sync::atomic::{AtomicBool, Ordering};

use rustix::fs::{AtFlags, Mode, OFlags, ResolveFlags, Statx, StatxFlags};

static NOATIME_DENIED: AtomicBool = AtomicBool::new(false);

/// `openat2(dir, path, flags | O_NOATIME | O_CLOEXEC, resolve)`.
///
/// With an empty `resolve` this is a plain `openat`. `O_NOATIME` is only
/// permitted to the file's owner (or with `CAP_FOWNER`); on `EPERM` the call is
/// retried without it, and when that happens to an unprivileged user later calls
/// skip it.
pub fn open_noatime(dir: impl AsFd, path: &[u8], flags: OFlags, resolve: ResolveFlags) -> io::Result<OwnedFd> {
    let flags = flags | OFlags::CLOEXEC;
    let open = |flags: OFlags| {
        if resolve.is_empty() {
            rustix::fs::openat(&dir, path, flags, Mode::empty())
        } else {
            rustix::fs::openat2(&dir, path, flags, Mode::empty(), resolve)
        }
    };
    if !NOATIME_DENIED.load(Ordering::Relaxed) && !flags.contains(OFlags::PATH) {
        match open(flags | OFlags::NOATIME) {
            Ok(fd) => return Ok(fd),
            Err(rustix::io::Errno::PERM) => {
                // Owner mismatch: not worth asking again for files we don't own.
                if !rustix::process::geteuid().is_root() {
                    NOATIME_DENIED.store(true, Ordering::Relaxed);
                }
            }
            Err(e) => return Err(e.into()),
        }
    }
    open(flags).map_err(io::Error::from)
}

const WANT: StatxFlags = StatxFlags::BASIC_STATS.union(StatxFlags::BTIME);

/// `statx(dir, path)`, following a final symlink only when `follow` is set.
pub fn statx_at(dir: impl AsFd, path: &[u8], follow: bool) -> io::Result<Statx> {
    let flags = if follow { AtFlags::empty() } else { AtFlags::SYMLINK_NOFOLLOW };
    rustix::fs::statx(dir, path, flags, WANT).map_err(io::Error::from)
}

/// `statx` of an open descriptor (`AT_EMPTY_PATH`).
pub fn statx_fd(fd: impl AsFd) -> io::Result<Statx> {
    rustix::fs::statx(fd, c"", AtFlags::EMPTY_PATH, WANT).map_err(io::Error::from)
}
