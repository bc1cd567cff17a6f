//! `FS_IOC_FIEMAP`: the physical layout of a file.

use std::io;
use std::os::fd::{AsFd, AsRawFd};

bitflags::bitflags! {
    /// `fe_flags` of one extent, as defined in `linux/fiemap.h`.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
    pub struct ExtentFlags: u32 {
        /// The last extent of the file.
        const LAST = 0x0001;
        /// The location is not known; `physical` is meaningless.
        const UNKNOWN = 0x0002;
        /// Delayed allocation: the data is in the page cache and has no block yet.
        const DELALLOC = 0x0004;
        /// The data is encoded (compressed, …); `physical` may not be readable directly.
        const ENCODED = 0x0008;
        /// The data is encrypted.
        const DATA_ENCRYPTED = 0x0080;
        /// The extent is not aligned to blocks.
        const NOT_ALIGNED = 0x0100;
        /// The data is stored inline in the inode or metadata block.
        const DATA_INLINE = 0x0200;
        /// Several files share the block (tail packing).
        const DATA_TAIL = 0x0400;
        /// Allocated but never written: reads return zeros and cost no I/O.
        const UNWRITTEN = 0x0800;
        /// The kernel merged extents to fit the request.
        const MERGED = 0x1000;
        /// The extent is shared with another file (reflink, snapshot).
        const SHARED = 0x2000;
    }
}

/// One extent of a file, in bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Extent {
    /// Offset in the file.
    pub logical: u64,
    /// Offset on the device (`fe_physical`); meaningless when
    /// [`ExtentFlags::UNKNOWN`] or [`ExtentFlags::DELALLOC`] is set.
    pub physical: u64,
    /// Length in bytes.
    pub length: u64,
    /// The extent's flags.
    pub flags: ExtentFlags,
}

impl Extent {
    /// Whether reading this extent needs a request to the device at `physical`.
    /// Inline, delayed-allocation, unwritten and unknown extents do not.
    pub fn needs_device_read(&self) -> bool {
        !self.flags.intersects(
            ExtentFlags::UNKNOWN
                | ExtentFlags::DELALLOC
                | ExtentFlags::DATA_INLINE
                | ExtentFlags::UNWRITTEN
                | ExtentFlags::DATA_TAIL,
        )
    }
}

// The kernel's structures, from include/uapi/linux/fiemap.h.
#[repr(C)]
#[derive(Clone, Copy, Default)]
struct RawExtent {
    fe_logical: u64,
    fe_physical: u64,
    fe_length: u64,
    fe_reserved64: [u64; 2],
    fe_flags: u32,
    fe_reserved: [u32; 3],
}

#[repr(C)]
struct RawFiemap<const N: usize> {
    fm_start: u64,
    fm_length: u64,
    fm_flags: u32,
    fm_mapped_extents: u32,
    fm_extent_count: u32,
    fm_reserved: u32,
    fm_extents: [RawExtent; N],
}

/// `_IOWR('f', 11, struct fiemap)`.
const FS_IOC_FIEMAP: libc::c_ulong = 0xC020_660B;
const BATCH: usize = 64;

/// All extents of a file, from its start to its end.
///
/// Errors are the kernel's: `EOPNOTSUPP` or `ENOTTY` mean the file system has no
/// FIEMAP (tmpfs, overlayfs, NFS, FUSE); callers fall back to another order.
pub fn fiemap(file: &impl AsFd) -> io::Result<Vec<Extent>> {
    fiemap_range(file, 0, u64::MAX, usize::MAX)
}

/// Extents that overlap `[start, start + len)`, at most `max` of them (the
/// kernel is asked for at most 64 at a time, and asked again until it reports
/// [`ExtentFlags::LAST`], runs out of extents, or `max` are collected).
pub fn fiemap_range(file: &impl AsFd, start: u64, len: u64, max: usize) -> io::Result<Vec<Extent>> {
    let fd = file.as_fd().as_raw_fd();
    let mut out = Vec::new();
    let end = start.saturating_add(len);
    let mut pos = start;
    let mut req: Box<RawFiemap<BATCH>> = Box::new(RawFiemap {
        fm_start: 0,
        fm_length: 0,
        fm_flags: 0,
        fm_mapped_extents: 0,
        fm_extent_count: 0,
        fm_reserved: 0,
        fm_extents: [RawExtent::default(); BATCH],
    });
    while pos < end && out.len() < max {
        let want = (max - out.len()).min(BATCH);
        req.fm_start = pos;
        req.fm_length = end - pos;
        req.fm_flags = 0;
        req.fm_mapped_extents = 0;
        req.fm_extent_count = want as u32;
        req.fm_reserved = 0;
        // SAFETY: `req` is a valid, exclusively borrowed `struct fiemap` followed by
        // room for `fm_extent_count <= BATCH` extents, which is all the kernel
        // writes; `fd` is a live descriptor borrowed for the duration of the call.
        let rc = unsafe { libc::ioctl(fd, FS_IOC_FIEMAP, &mut *req as *mut RawFiemap<BATCH>) };
        if rc < 0 {
            return Err(io::Error::last_os_error());
        }
        let n = (req.fm_mapped_extents as usize).min(want);
        if n == 0 {
            break;
        }
        let mut last = false;
        for raw in &req.fm_extents[..n] {
            let e = Extent {
                logical: raw.fe_logical,
                physical: raw.fe_physical,
                length: raw.fe_length,
                flags: ExtentFlags::from_bits_retain(raw.fe_flags),
            };
            last |= e.flags.contains(ExtentFlags::LAST);
            out.push(e);
        }
        if last {
            break;
        }
        let tail = out[out.len() - 1];
        let next = tail.logical.saturating_add(tail.length);
        if next <= pos {
            break; // no progress: never loop forever on a confused file system
        }
        pos = next;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Seek, SeekFrom, Write};

    fn in_target() -> tempfile::TempDir {
        // /tmp may be tmpfs elsewhere; target/ is on the build's file system.
        let base = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/tmp");
        std::fs::create_dir_all(&base).unwrap();
        tempfile::tempdir_in(base).unwrap()
    }

    #[test]
    fn maps_a_written_file_and_its_hole() {
        let d = in_target();
        let p = d.path().join("f");
        let mut f = std::fs::File::create(&p).unwrap();
        f.write_all(&vec![7u8; 1 << 20]).unwrap();
        f.seek(SeekFrom::Start(64 << 20)).unwrap();
        f.write_all(&vec![9u8; 4096]).unwrap();
        f.sync_all().unwrap();
        let ext = match fiemap(&f) {
            Ok(e) => e,
            Err(e) if matches!(e.raw_os_error(), Some(libc::EOPNOTSUPP) | Some(libc::ENOTTY)) => {
                eprintln!("skip: no FIEMAP on the build file system: {e}");
                assert!(std::env::var("CI").as_deref() != Ok("true"), "CI needs FIEMAP");
                return;
            }
            Err(e) => panic!("{e}"),
        };
        assert!(!ext.is_empty());
        assert_eq!(ext[0].logical, 0);
        assert!(ext.last().unwrap().flags.contains(ExtentFlags::LAST));
        let mapped: u64 = ext.iter().map(|e| e.length).sum();
        assert!(((1 << 20) + 4096..(3 << 20)).contains(&mapped), "{ext:?}");
        let tail = ext.iter().find(|e| e.logical == 64 << 20).expect("extent after the hole");
        assert!(tail.physical > 0 && tail.needs_device_read());
        // Asking for one extent at a time gives the same answer.
        let one = fiemap_range(&f, 0, u64::MAX, 1).unwrap();
        assert_eq!(one.len(), 1);
        assert_eq!(one[0], ext[0]);
    }
}
