//! The system calls qtar needs, and the only crate in qtar with `unsafe` code.
//!
//! * [`fiemap`]: `FS_IOC_FIEMAP`, keeping `fe_physical` and every extent flag,
//!   looping until the kernel reports the last extent.
//! * [`DirReader`]: `getdents64` with `d_ino` and `d_type`.
//! * [`statx_at`] / [`statx_fd`]: `statx(2)`.
//! * [`fadvise`], [`readahead`]: page-cache hints.
//! * [`open_noatime`]: `O_NOATIME` with a fallback when it is not permitted.
//! * [`rotational`]: whether the block device behind a `st_dev` is rotational.
//!
//! Where rustix has a safe wrapper (getdents, statx, fadvise, openat) this crate
//! uses it; FIEMAP and `readahead(2)` are raw `libc` calls, each with a
//! `// SAFETY:` comment.
//!
//! ```no_run
//! use std::fs::File;
//! let f = File::open("/etc/passwd").unwrap();
//! for e in qtar_sys::fiemap(&f).unwrap() {
//!     println!("logical {} physical {} len {} {:?}", e.logical, e.physical, e.length, e.flags);
//! }
//! ```
#![deny(missing_docs)]

mod dir;
mod fiemap;
mod hints;
mod open;
mod rotational;

pub use dir::{DirEntry, DirReader, FileKind};
pub use fiemap::{Extent, ExtentFlags, fiemap, fiemap_range};
pub use hints::{Advice, fadvise, readahead};
pub use open::{open_noatime, statx_at, statx_fd};
pub use rotational::{BlockDev, rotational};
pub use rustix::fs::{OFlags, ResolveFlags, Statx};
