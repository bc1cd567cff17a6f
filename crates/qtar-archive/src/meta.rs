//! Entry metadata and writer options.

use std::os::unix::fs::{FileTypeExt, MetadataExt};

/// Archive format, named like GNU tar's `--format` values.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// GNU tar 1.13+ format (GNU tar 1.34's default): `././@LongLink` records,
    /// base-256 numbers, magic `"ustar  \0"`.
    Gnu,
    /// GNU tar < 1.12 format: like [`Format::Gnu`] but names of exactly 100
    /// bytes also get a long-name record.
    OldGnu,
    /// POSIX.1-2001 (pax) format with GNU tar's extended headers.
    Pax,
    /// Same as [`Format::Pax`] (GNU's `--format=posix`).
    Posix,
    /// POSIX.1-1988 ustar: names up to 256 bytes via the prefix field, no
    /// extensions.
    Ustar,
    /// Unix V7: names up to 99 bytes, no user/group names.
    V7,
}

impl Format {
    /// True for the two GNU formats (long-name records and base-256 numbers).
    pub fn is_gnu(self) -> bool {
        matches!(self, Format::Gnu | Format::OldGnu)
    }
    /// True for pax/posix.
    pub fn is_pax(self) -> bool {
        matches!(self, Format::Pax | Format::Posix)
    }
}

/// The kind of an archive member.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EntryKind {
    /// Regular file.
    File,
    /// Directory (its member name gets a trailing `/`).
    Dir,
    /// Symbolic link with its target, stored verbatim.
    Symlink {
        /// Link target bytes.
        target: Vec<u8>,
    },
    /// Hard link to an earlier member.
    HardLink {
        /// Member name of the earlier entry.
        target: Vec<u8>,
    },
    /// Named pipe.
    Fifo,
    /// Character device.
    CharDev {
        /// Device major number.
        major: u32,
        /// Device minor number.
        minor: u32,
    },
    /// Block device.
    BlockDev {
        /// Device major number.
        major: u32,
        /// Device minor number.
        minor: u32,
    },
}

/// A point in time, seconds since the epoch (may be negative) plus nanoseconds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Default)]
pub struct Timestamp {
    /// Whole seconds since 1970-01-01 UTC, negative before.
    pub sec: i64,
    /// Nanoseconds, 0..1_000_000_000, always added to `sec`.
    pub nsec: u32,
}

impl Timestamp {
    /// Builds a timestamp.
    pub fn new(sec: i64, nsec: u32) -> Self {
        Timestamp { sec, nsec }
    }
}

/// Metadata of one member, as the caller read it from the file system.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EntryMeta {
    /// Kind of member.
    pub kind: EntryKind,
    /// Permission bits: `st_mode & 0o7777`.
    pub mode: u32,
    /// Owner user id.
    pub uid: u64,
    /// Owner group id.
    pub gid: u64,
    /// Owner user name (from the passwd database); `None` stores an empty name.
    pub uname: Option<Vec<u8>>,
    /// Owner group name (from the group database); `None` stores an empty name.
    pub gname: Option<Vec<u8>>,
    /// Size in bytes for regular files (ignored for other kinds).
    pub size: u64,
    /// Modification time.
    pub mtime: Timestamp,
    /// Access time (stored in pax archives).
    pub atime: Timestamp,
    /// Status change time (stored in pax archives).
    pub ctime: Timestamp,
    /// Extended attributes (name, value), stored when `WriteOptions::xattrs`.
    pub xattrs: Vec<(Vec<u8>, Vec<u8>)>,
}

impl EntryMeta {
    /// Builds metadata from `std::fs::Metadata` (of `lstat`) and the kind the
    /// caller determined. User and group names are left `None`; xattrs empty.
    /// For devices, pass any kind and the major/minor numbers come from
    /// `st_rdev` when `kind` is a device.
    pub fn from_std(md: &std::fs::Metadata, kind: EntryKind) -> Self {
        let kind = match kind {
            EntryKind::CharDev { .. } => {
                let (major, minor) = split_dev(md.rdev());
                EntryKind::CharDev { major, minor }
            }
            EntryKind::BlockDev { .. } => {
                let (major, minor) = split_dev(md.rdev());
                EntryKind::BlockDev { major, minor }
            }
            k => k,
        };
        let size = if kind == EntryKind::File { md.size() } else { 0 };
        EntryMeta {
            kind,
            mode: md.mode() & 0o7777,
            uid: u64::from(md.uid()),
            gid: u64::from(md.gid()),
            uname: None,
            gname: None,
            size,
            mtime: Timestamp::new(md.mtime(), md.mtime_nsec() as u32),
            atime: Timestamp::new(md.atime(), md.atime_nsec() as u32),
            ctime: Timestamp::new(md.ctime(), md.ctime_nsec() as u32),
            xattrs: Vec::new(),
        }
    }

    /// Like [`EntryMeta::from_std`], deriving the kind from the file type
    /// (symlink targets must be read by the caller, so symlinks get an empty
    /// target here; hard links are never derived).
    pub fn kind_of(md: &std::fs::Metadata) -> EntryKind {
        let ft = md.file_type();
        let (major, minor) = split_dev(md.rdev());
        if ft.is_dir() {
            EntryKind::Dir
        } else if ft.is_symlink() {
            EntryKind::Symlink { target: Vec::new() }
        } else if ft.is_fifo() {
            EntryKind::Fifo
        } else if ft.is_char_device() {
            EntryKind::CharDev { major, minor }
        } else if ft.is_block_device() {
            EntryKind::BlockDev { major, minor }
        } else {
            EntryKind::File
        }
    }
}

/// Splits a Linux `dev_t` into (major, minor) like glibc's `major()`/`minor()`.
pub(crate) fn split_dev(dev: u64) -> (u32, u32) {
    let major = ((dev >> 32) & 0xffff_f000) | ((dev >> 8) & 0x0000_0fff);
    let minor = ((dev >> 12) & 0xffff_ff00) | (dev & 0x0000_00ff);
    (major as u32, minor as u32)
}

/// Options of an [`crate::ArchiveWriter`], mirroring GNU tar's flags.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WriteOptions {
    /// `--format`.
    pub format: Format,
    /// `--numeric-owner`: store empty user/group names.
    pub numeric_owner: bool,
    /// `--owner=NAME:ID`: replaces every member's owner (name may be absent).
    pub owner: Option<(Option<Vec<u8>>, u64)>,
    /// `--group=NAME:ID`: replaces every member's group.
    pub group: Option<(Option<Vec<u8>>, u64)>,
    /// `--mtime`: replaces every member's modification time.
    pub mtime: Option<Timestamp>,
    /// `--xattrs`: store `EntryMeta::xattrs` as `SCHILY.xattr.*` pax records.
    /// Like GNU tar 1.34, this turns an archive of any format into a pax archive.
    pub xattrs: bool,
    /// `--sparse`/`-S`: store holes of regular files (found with
    /// SEEK_DATA/SEEK_HOLE) instead of reading them as zeros.
    pub sparse: bool,
    /// Record size in bytes (`-b` × 512), default 10240.
    pub record_size: usize,
}

impl WriteOptions {
    /// Default options for a format (like `tar --format=F -cf`).
    pub fn new(format: Format) -> Self {
        WriteOptions {
            format,
            numeric_owner: false,
            owner: None,
            group: None,
            mtime: None,
            xattrs: false,
            sparse: false,
            record_size: crate::write::DEFAULT_RECORD_SIZE,
        }
    }
}

impl Default for WriteOptions {
    fn default() -> Self {
        WriteOptions::new(Format::Gnu)
    }
}
