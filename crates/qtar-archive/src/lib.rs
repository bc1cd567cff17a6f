//! The tar format layer of qtar.
//!
//! This crate writes tar archives whose bytes match what GNU tar 1.34 writes
//! for the same files (formats `gnu`, `oldgnu`, `pax`/`posix`, `ustar`, `v7`),
//! lists archives like `tar -t`/`tar -tv`, extracts them safely (nothing can
//! land outside the destination directory), and wraps streams in
//! gzip/bzip2/xz/zstd compression.
//!
//! The caller decides which files go in and in what order; this crate only
//! encodes each entry. Entries are written with [`ArchiveWriter::append`],
//! which streams exactly `meta.size` bytes of a regular file whatever the
//! file does while it is read (see [`AppendOutcome`]).
//!
//! Verified against GNU tar 1.34 by the integration tests: header blocks are
//! byte-identical for gnu, oldgnu, pax/posix, ustar and v7 (long names and
//! links, base-256 and pax numbers, negative times, devices, FIFOs, hard
//! links, non-UTF-8 names, xattrs, sparse files in both formats); `list`
//! output equals `tar -tf`/`tar -tvf`.
//!
//! Known differences from GNU tar:
//! - pax sparse members are named `%d/GNUSparseFile.%p/%f` with *our*
//!   process id (GNU uses its own), so those headers differ by the pid.
//! - `WriteOptions::owner`/`group` without a name store an empty name (GNU
//!   would look the id up); user/group name lookups are the caller's job.
//! - `list` quotes names like GNU in the C locale (`\ooo` for non-ASCII);
//!   times after a zone's last TZif transition (2037) use its last offset.
//! - `extract` reports members reached through an escaping symlink with the
//!   kernel's error ("Invalid cross-device link"); GNU's text varies.
//!   FIFOs and devices get their mode with `fchmodat` right after `mknodat`.
//!   Not implemented: `--keep-old-files`, `--skip-old-files`,
//!   `--keep-directory-symlink`, `--absolute-names`, ACLs and SELinux labels.
//! - Growth of a file while it is stored sparsely (`-S`) is not detected.
//!
//! ```
//! use qtar_archive::{ArchiveWriter, EntryKind, EntryMeta, Format, WriteOptions, list};
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let dir = std::env::temp_dir().join(format!("qtar-archive-doc-{}", std::process::id()));
//! std::fs::create_dir_all(&dir)?;
//! let path = dir.join("hello.txt");
//! std::fs::write(&path, b"hello\n")?;
//! let mut file = std::fs::File::open(&path)?;
//! let meta = EntryMeta::from_std(&file.metadata()?, EntryKind::File);
//! let mut w = ArchiveWriter::new(Vec::new(), WriteOptions::new(Format::Gnu));
//! w.append(b"hello.txt", &meta, Some(&mut file))?;
//! let bytes = w.finish()?;
//! assert_eq!(bytes.len(), 10240);
//! let mut out = Vec::new();
//! list(&bytes[..], 0, false, &mut out)?;
//! assert_eq!(out, b"hello.txt\n");
//! std::fs::remove_dir_all(&dir)?;
//! # Ok(()) }
//! ```
#![forbid(unsafe_code)]
#![deny(missing_docs)]

mod compress;
mod error;
mod extract;

mod meta;
mod name;
mod read;
mod sparse;
mod tz;
mod write;

pub use compress::{CompressWriter, Compression, compress_writer, decompress_reader, detect_compression};
pub use error::ArchiveError;
pub use extract::{ExtractOptions, ExtractReport, extract};

pub use meta::{EntryKind, EntryMeta, Format, Timestamp, WriteOptions};
pub use name::member_name;
pub use read::{list, list_in_zone};
pub use write::{AppendOutcome, ArchiveWriter, DEFAULT_RECORD_SIZE};
