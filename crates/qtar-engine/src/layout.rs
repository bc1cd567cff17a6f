//! Where things are on the device: the ext4 inode-table map, the file-system
//! type, and whether inode numbers say anything about position.
//!
//! With the block device readable (root), the ext4 superblock and group
//! descriptors give the exact byte offset of every inode, so stat requests and
//! directory reads (keyed by their FIEMAP data offset) share one key space: the
//! disk byte offset. Without it, everything is keyed by inode number, which on
//! ext4 and XFS still follows disk position.

use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;

use qtar_sys::BlockDev;

/// `statfs.f_type` values of file systems whose inode numbers follow position.
const EXT_MAGIC: u64 = 0xEF53;
const XFS_MAGIC: u64 = 0x5846_5342;
const BTRFS_MAGIC: u64 = 0x9123_683E;

/// What we know about the file system under a root.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FsKind {
    /// ext2, ext3 or ext4.
    Ext,
    /// XFS.
    Xfs,
    /// btrfs (inode numbers are allocation order, not position).
    Btrfs,
    /// Anything else (tmpfs, overlayfs, NFS, FUSE, …), with its `f_type`.
    Other(u64),
}

impl FsKind {
    /// The kind of file system holding `fd`.
    pub fn of(fd: impl std::os::fd::AsFd) -> io::Result<Self> {
        let st = rustix::fs::fstatfs(fd)?;
        Ok(match st.f_type as u64 {
            EXT_MAGIC => Self::Ext,
            XFS_MAGIC => Self::Xfs,
            BTRFS_MAGIC => Self::Btrfs,
            t => Self::Other(t),
        })
    }

    /// Whether inode numbers are a useful stand-in for disk position.
    pub fn inode_order_meaningful(self) -> bool {
        matches!(self, Self::Ext | Self::Xfs | Self::Btrfs)
    }
}

/// The ext4 inode-table map: where each group's inode table is, and how much
/// of it is in use.
#[derive(Debug, Clone)]
pub struct Ext4Map {
    inodes_per_group: u64,
    inode_size: u64,
    block_size: u64,
    groups: Vec<Group>,
    /// Groups per flex group (1 without `flex_bg`): their inode tables lie
    /// next to each other.
    groups_per_flex: usize,
}

/// What a group descriptor says about a group's inodes.
#[derive(Debug, Clone, Copy)]
struct Group {
    /// First block of the inode table.
    inode_table: u64,
    /// Inodes at the end of the table never used since mkfs (valid only with
    /// group descriptor checksums; 0 otherwise).
    itable_unused: u64,
    /// `EXT4_BG_INODE_UNINIT`: no inode of the group has ever been used.
    inode_uninit: bool,
}

/// `bg_flags`: the group's inode table and bitmap were never initialised.
const BG_INODE_UNINIT: u16 = 0x1;
/// `s_feature_ro_compat` bits under which `bg_itable_unused` and the
/// `UNINIT` flags are maintained.
const RO_COMPAT_GDT_CSUM: u64 = 0x10;
const RO_COMPAT_METADATA_CSUM: u64 = 0x400;

impl Ext4Map {
    /// Reads the superblock and group descriptors of the ext4 device `dev`
    /// (through `/dev/block/MAJ:MIN` or the `DEVNAME` in sysfs). Fails without
    /// read permission on the device, which is the normal case for non-root users.
    pub fn probe(dev: BlockDev) -> io::Result<Self> {
        let f = open_block_dev(dev)?;
        let mut sb = [0u8; 1024];
        f.read_exact_at(&mut sb, 1024)?;
        Self::parse(&sb, |off, buf| f.read_exact_at(buf, off))
    }

    /// Parses a superblock (the 1024 bytes at offset 1024) and reads the group
    /// descriptors with `read_at(offset, buf)`.
    pub fn parse(sb: &[u8; 1024], read_at: impl Fn(u64, &mut [u8]) -> io::Result<()>) -> io::Result<Self> {
        let u16_at = |o: usize| u16::from_le_bytes([sb[o], sb[o + 1]]) as u64;
        let u32_at = |o: usize| u32::from_le_bytes(sb[o..o + 4].try_into().unwrap()) as u64;
        if u16_at(0x38) != 0xEF53 {
            return Err(io::Error::new(io::ErrorKind::InvalidData, "not an ext2/3/4 superblock"));
        }
        let bad = |what: &str| io::Error::new(io::ErrorKind::InvalidData, format!("ext4 superblock: bad {what}"));
        let log_bs = u32_at(0x18);
        if log_bs > 6 {
            return Err(bad("block size"));
        }
        let block_size = 1024u64 << log_bs;
        let blocks_per_group = u32_at(0x20);
        let inodes_per_group = u32_at(0x28);
        let first_data_block = u32_at(0x14);
        let incompat = u32_at(0x60);
        let is64 = incompat & 0x80 != 0;
        let blocks_count = u32_at(0x04) | if is64 { u32_at(0x150) << 32 } else { 0 };
        let inode_size = if u32_at(0x4C) == 0 { 128 } else { u16_at(0x58) };
        let desc_size = if is64 { u16_at(0xFE).max(32) } else { 32 };
        if blocks_per_group == 0 || inodes_per_group == 0 || inode_size == 0 || blocks_count <= first_data_block {
            return Err(bad("geometry"));
        }
        let groups = (blocks_count - first_data_block).div_ceil(blocks_per_group);
        if groups > 1 << 24 {
            return Err(bad("group count"));
        }
        let csum = u32_at(0x64) & (RO_COMPAT_GDT_CSUM | RO_COMPAT_METADATA_CSUM) != 0;
        let mut desc = vec![0u8; (groups * desc_size) as usize];
        read_at((first_data_block + 1) * block_size, &mut desc)?;
        let groups = desc
            .chunks_exact(desc_size as usize)
            .map(|d| {
                let u16_at = |o: usize| u16::from_le_bytes([d[o], d[o + 1]]) as u64;
                let u32_at = |o: usize| u32::from_le_bytes(d[o..o + 4].try_into().unwrap()) as u64;
                let wide = desc_size >= 64;
                let inode_table = u32_at(0x08) | if wide { u32_at(0x28) << 32 } else { 0 };
                let itable_unused = u16_at(0x1C) | if wide { u16_at(0x32) << 16 } else { 0 };
                let flags = u16_at(0x12) as u16;
                Group {
                    inode_table,
                    itable_unused: if csum { itable_unused.min(inodes_per_group) } else { 0 },
                    inode_uninit: csum && flags & BG_INODE_UNINIT != 0,
                }
            })
            .collect();
        // INCOMPAT_FLEX_BG, and s_log_groups_per_flex.
        let groups_per_flex = if incompat & 0x200 != 0 && sb[0x174] < 31 { 1usize << sb[0x174] } else { 1 };
        Ok(Self { inodes_per_group, inode_size, block_size, groups, groups_per_flex })
    }

    /// The groups of the flex group holding group `g` (just `g` without
    /// `flex_bg`).
    pub fn flex_group(&self, g: usize) -> std::ops::Range<usize> {
        let start = g - g % self.groups_per_flex;
        start..(start + self.groups_per_flex).min(self.groups.len())
    }

    /// The number of block groups.
    pub fn groups(&self) -> usize {
        self.groups.len()
    }

    /// The file system's block size in bytes.
    pub fn block_size(&self) -> u64 {
        self.block_size
    }

    /// The on-disk size of one inode.
    pub fn inode_size(&self) -> u64 {
        self.inode_size
    }

    /// The block group holding inode `ino`.
    pub fn group_of(&self, ino: u64) -> Option<usize> {
        let g = (ino.checked_sub(1)? / self.inodes_per_group) as usize;
        (g < self.groups.len()).then_some(g)
    }

    /// The part of group `g`'s inode table that may hold inodes in use: the
    /// first inode number, the byte offset on the device, and the length.
    /// `None` when the group has never had an inode.
    pub fn used_inode_table(&self, g: usize) -> Option<(u64, u64, u64)> {
        let grp = self.groups.get(g)?;
        let used = self.inodes_per_group - grp.itable_unused;
        if grp.inode_uninit || used == 0 {
            return None;
        }
        Some((g as u64 * self.inodes_per_group + 1, grp.inode_table * self.block_size, used * self.inode_size))
    }

    /// The byte offset of inode `ino` on the device, if it is in range.
    pub fn inode_offset(&self, ino: u64) -> Option<u64> {
        let i = ino.checked_sub(1)?;
        let group = (i / self.inodes_per_group) as usize;
        let table = self.groups.get(group)?.inode_table;
        Some(table * self.block_size + (i % self.inodes_per_group) * self.inode_size)
    }
}

/// What the prefetcher needs to know of one on-disk inode.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RawInode {
    /// `i_mode`: type and permission bits.
    pub mode: u16,
    /// Where its blocks are, as far as the inode itself says.
    pub map: BlockMap,
}

/// The block map held in an inode's `i_block`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BlockMap {
    /// Extents held in the inode (an extent tree of depth 0): (first block,
    /// length in blocks) of each initialised extent.
    Extents(Vec<(u64, u64)>),
    /// An extent tree of depth 1 or more: the blocks its index entries point to
    /// (the leaves, for depth 1). Reading the extents costs a read of these.
    Index(Vec<u64>),
    /// No extents to read: inline data, an empty file, a fast symlink, an
    /// indirect-block (ext2/3) map, or an `i_block` that does not parse.
    Other,
}

/// `i_flags` bits.
const EXTENTS_FL: u32 = 0x8_0000;
const INLINE_DATA_FL: u32 = 0x1000_0000;
/// `eh_magic` of an extent header.
const EXT_MAGIC_HDR: u16 = 0xF30A;
/// File types in `i_mode`.
pub(crate) const S_IFMT: u16 = 0o170000;
pub(crate) const S_IFDIR: u16 = 0o040000;
pub(crate) const S_IFREG: u16 = 0o100000;

/// Parses one on-disk ext4 inode (at least the 128-byte base). Returns `None`
/// for a free inode (no links, or deleted).
pub fn parse_inode(raw: &[u8]) -> Option<RawInode> {
    if raw.len() < 128 {
        return None;
    }
    let u16_at = |o: usize| u16::from_le_bytes([raw[o], raw[o + 1]]);
    let u32_at = |o: usize| u32::from_le_bytes(raw[o..o + 4].try_into().unwrap());
    let mode = u16_at(0x00);
    let links = u16_at(0x1A);
    let dtime = u32_at(0x14);
    if mode == 0 || links == 0 || dtime != 0 {
        return None;
    }
    let flags = u32_at(0x20);
    let block = &raw[0x28..0x28 + 60];
    let map =
        if flags & EXTENTS_FL == 0 || flags & INLINE_DATA_FL != 0 { BlockMap::Other } else { parse_extent_root(block) };
    Some(RawInode { mode, map })
}

/// The extent tree root held in `i_block` (60 bytes: a header and up to four
/// entries).
fn parse_extent_root(b: &[u8]) -> BlockMap {
    let u16_at = |o: usize| u16::from_le_bytes([b[o], b[o + 1]]);
    let u32_at = |o: usize| u32::from_le_bytes(b[o..o + 4].try_into().unwrap()) as u64;
    let (magic, entries, depth) = (u16_at(0), u16_at(2) as usize, u16_at(6));
    if magic != EXT_MAGIC_HDR || entries > 4 {
        return BlockMap::Other;
    }
    let ent = |i: usize| 12 + 12 * i;
    if depth == 0 {
        let v = (0..entries)
            .filter_map(|i| {
                let e = ent(i);
                let len = u16_at(e + 4) as u64;
                // Lengths over 32768 mark unwritten extents: no read needed.
                let start = (u16_at(e + 6) as u64) << 32 | u32_at(e + 8);
                (len > 0 && len <= 32768).then_some((start, len))
            })
            .collect();
        BlockMap::Extents(v)
    } else {
        BlockMap::Index((0..entries).map(|i| (u16_at(ent(i) + 8) as u64) << 32 | u32_at(ent(i) + 4)).collect())
    }
}

pub(crate) fn open_block_dev(dev: BlockDev) -> io::Result<File> {
    let by_num = format!("/dev/block/{}:{}", dev.major, dev.minor);
    if let Ok(f) = File::open(&by_num) {
        return Ok(f);
    }
    let uevent = std::fs::read_to_string(format!("/sys/dev/block/{}:{}/uevent", dev.major, dev.minor))?;
    let name = uevent
        .lines()
        .find_map(|l| l.strip_prefix("DEVNAME="))
        .ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, "no DEVNAME in uevent"))?;
    File::open(format!("/dev/{name}"))
}

/// How positions are keyed for one scan.
#[derive(Debug, Clone)]
pub(crate) enum KeySpace {
    /// Disk byte offsets: inode offsets from the ext4 map, data from FIEMAP.
    Bytes(Ext4Map),
    /// Inode numbers (for stats and directory reads alike).
    Inode,
    /// Discovery order: a counter.
    Discovery,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sb(groups: u64, is64: bool) -> [u8; 1024] {
        let mut sb = [0u8; 1024];
        let put32 = |sb: &mut [u8; 1024], o: usize, v: u32| sb[o..o + 4].copy_from_slice(&v.to_le_bytes());
        put32(&mut sb, 0x04, (groups * 32768) as u32);
        put32(&mut sb, 0x14, 0);
        put32(&mut sb, 0x18, 2); // 4 KiB
        put32(&mut sb, 0x20, 32768);
        put32(&mut sb, 0x28, 8192);
        put32(&mut sb, 0x4C, 1); // dynamic rev
        sb[0x58..0x5A].copy_from_slice(&256u16.to_le_bytes());
        sb[0x38..0x3A].copy_from_slice(&0xEF53u16.to_le_bytes());
        if is64 {
            put32(&mut sb, 0x60, 0x80);
            sb[0xFE..0x100].copy_from_slice(&64u16.to_le_bytes());
        }
        sb
    }

    #[test]
    fn maps_inodes_through_group_descriptors() {
        for is64 in [false, true] {
            let ds = if is64 { 64 } else { 32 };
            let sb = sb(3, is64);
            let tables = [100u32, 612, 5000];
            let m = Ext4Map::parse(&sb, |off, buf| {
                assert_eq!(off, 4096, "descriptors follow the superblock's block");
                for (g, t) in tables.iter().enumerate() {
                    buf[g * ds + 8..g * ds + 12].copy_from_slice(&t.to_le_bytes());
                }
                Ok(())
            })
            .unwrap();
            assert_eq!(m.inode_offset(1), Some(100 * 4096));
            assert_eq!(m.inode_offset(2), Some(100 * 4096 + 256));
            assert_eq!(m.inode_offset(8193), Some(612 * 4096));
            assert_eq!(m.inode_offset(2 * 8192 + 5), Some(5000 * 4096 + 4 * 256));
            assert_eq!(m.inode_offset(3 * 8192 + 1), None);
            assert_eq!(m.inode_offset(0), None);
        }
    }

    #[test]
    fn rejects_what_is_not_ext4() {
        let sb = [0u8; 1024];
        assert!(Ext4Map::parse(&sb, |_, _| Ok(())).is_err());
    }
}
