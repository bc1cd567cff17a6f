//! `getdents64` with inode numbers and types.

use std::io;
use std::mem::MaybeUninit;
use std::os::fd::AsFd;

use rustix::fs::{FileType, RawDir};

/// The kind of a directory entry, from `d_type` or from `st_mode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u8)]
pub enum FileKind {
    /// A regular file.
    File,
    /// A directory.
    Dir,
    /// A symbolic link.
    Symlink,
    /// A named pipe.
    Fifo,
    /// A socket.
    Socket,
    /// A character device.
    CharDev,
    /// A block device.
    BlockDev,
    /// `DT_UNKNOWN`: the file system did not say; `stat` tells.
    Unknown,
}

impl FileKind {
    /// The kind encoded in a `st_mode`.
    pub fn from_mode(mode: u32) -> Self {
        Self::from(FileType::from_raw_mode(mode))
    }
}

impl From<FileType> for FileKind {
    fn from(t: FileType) -> Self {
        match t {
            FileType::RegularFile => Self::File,
            FileType::Directory => Self::Dir,
            FileType::Symlink => Self::Symlink,
            FileType::Fifo => Self::Fifo,
            FileType::Socket => Self::Socket,
            FileType::CharacterDevice => Self::CharDev,
            FileType::BlockDevice => Self::BlockDev,
            _ => Self::Unknown,
        }
    }
}

/// One entry of a directory; `.` and `..` are never returned.
#[derive(Debug, Clone, Copy)]
pub struct DirEntry<'a> {
    /// The name, without a trailing NUL.
    pub name: &'a [u8],
    /// `d_ino`.
    pub ino: u64,
    /// `d_type`.
    pub kind: FileKind,
}

/// Reads a whole directory with `getdents64`, reusing one buffer.
pub struct DirReader {
    buf: Vec<MaybeUninit<u8>>,
}

impl Default for DirReader {
    fn default() -> Self {
        Self::with_capacity(64 * 1024)
    }
}

impl DirReader {
    /// A reader with a `getdents` buffer of `bytes` bytes (at least 4 KiB).
    pub fn with_capacity(bytes: usize) -> Self {
        let mut buf = Vec::with_capacity(bytes.max(4096));
        buf.resize(bytes.max(4096), MaybeUninit::uninit());
        Self { buf }
    }

    /// Calls `each` for every entry of the open directory `dir`, in the order
    /// the file system returns them.
    pub fn read(&mut self, dir: impl AsFd, mut each: impl FnMut(DirEntry<'_>)) -> io::Result<()> {
        let mut it = RawDir::new(dir, &mut self.buf);
        while let Some(ent) = it.next() {
            let ent = ent.map_err(io::Error::from)?;
            let name = ent.file_name().to_bytes();
            if name == b"." || name == b".." {
                continue;
            }
            each(DirEntry { name, ino: ent.ino(), kind: ent.file_type().into() });
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::MetadataExt;

    #[test]
    fn lists_names_inodes_and_types() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("f"), b"x").unwrap();
        std::fs::create_dir(d.path().join("d")).unwrap();
        std::os::unix::fs::symlink("f", d.path().join("l")).unwrap();
        let dir = std::fs::File::open(d.path()).unwrap();
        let mut got = Vec::new();
        DirReader::with_capacity(0).read(&dir, |e| got.push((e.name.to_vec(), e.ino, e.kind))).unwrap();
        got.sort();
        let ino = |n: &str| std::fs::symlink_metadata(d.path().join(n)).unwrap().ino();
        assert_eq!(
            got,
            vec![
                (b"d".to_vec(), ino("d"), FileKind::Dir),
                (b"f".to_vec(), ino("f"), FileKind::File),
                (b"l".to_vec(), ino("l"), FileKind::Symlink),
            ]
        );
    }
}
