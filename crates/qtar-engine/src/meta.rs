//! Compact per-entry metadata.

pub use qtar_sys::FileKind;

/// A point in time: seconds since the epoch (may be negative) and nanoseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Timestamp {
    /// Seconds since 1970-01-01 UTC; negative before it.
    pub sec: i64,
    /// Nanoseconds, `0..1_000_000_000`.
    pub nsec: u32,
}

/// What `statx` said about an entry, kept compactly (about 100 bytes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Meta {
    /// The kind of file.
    pub kind: FileKind,
    /// `st_mode` (type and permission bits).
    pub mode: u32,
    /// Owner.
    pub uid: u32,
    /// Group.
    pub gid: u32,
    /// Link count.
    pub nlink: u32,
    /// Size in bytes.
    pub size: u64,
    /// 512-byte blocks allocated (less than `size / 512` for sparse files).
    pub blocks: u64,
    /// Inode number.
    pub ino: u64,
    /// Device holding the entry (`makedev(major, minor)`).
    pub dev: u64,
    /// Device number of a device special file.
    pub rdev_major: u32,
    /// Minor device number of a device special file.
    pub rdev_minor: u32,
    /// Last access.
    pub atime: Timestamp,
    /// Last modification.
    pub mtime: Timestamp,
    /// Last status change.
    pub ctime: Timestamp,
}

impl Meta {
    /// Converts a `statx` result.
    pub fn from_statx(st: &qtar_sys::Statx) -> Self {
        let ts = |t: rustix::fs::StatxTimestamp| Timestamp { sec: t.tv_sec, nsec: t.tv_nsec };
        let mode = st.stx_mode as u32;
        Self {
            kind: FileKind::from_mode(mode),
            mode,
            uid: st.stx_uid,
            gid: st.stx_gid,
            nlink: st.stx_nlink,
            size: st.stx_size,
            blocks: st.stx_blocks,
            ino: st.stx_ino,
            dev: rustix::fs::makedev(st.stx_dev_major, st.stx_dev_minor),
            rdev_major: st.stx_rdev_major,
            rdev_minor: st.stx_rdev_minor,
            atime: ts(st.stx_atime),
            mtime: ts(st.stx_mtime),
            ctime: ts(st.stx_ctime),
        }
    }

    /// Permission bits (`mode & 0o7777`).
    pub fn perm(&self) -> u32 {
        self.mode & 0o7777
    }

    /// Whether this is a regular file.
    pub fn is_file(&self) -> bool {
        self.kind == FileKind::File
    }

    /// Whether this is a directory.
    pub fn is_dir(&self) -> bool {
        self.kind == FileKind::Dir
    }
}
