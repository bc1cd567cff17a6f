//! Page-cache hints: `posix_fadvise(2)` and `readahead(2)`.

use std::io;
use std::os::fd::{AsFd, AsRawFd};

pub use rustix::fs::Advice;

/// `posix_fadvise(fd, offset, len, advice)`; `len == 0` means to the end of the file.
pub fn fadvise(file: &impl AsFd, offset: u64, len: u64, advice: Advice) -> io::Result<()> {
    let len = std::num::NonZeroU64::new(len);
    rustix::fs::fadvise(file, offset, len, advice).map_err(io::Error::from)
}

/// `readahead(fd, offset, count)`: start reading `count` bytes into the page
/// cache without waiting for them.
pub fn readahead(file: &impl AsFd, offset: u64, count: usize) -> io::Result<()> {
    let fd = file.as_fd().as_raw_fd();
    let off = i64::try_from(offset).map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))?;
    // SAFETY: readahead takes plain integers and touches no memory of ours; `fd`
    // is borrowed from a live descriptor for the duration of the call.
    let rc = unsafe { libc::readahead(fd, off, count) };
    if rc < 0 { Err(io::Error::last_os_error()) } else { Ok(()) }
}
