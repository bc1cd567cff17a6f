//! Metadata prefetch on ext4, when the block device is readable (root).
//!
//! The buffer cache ext4 reads its metadata through is the block device's
//! page cache, so blocks read from the device are found there by later
//! `statx`, `getdents` and FIEMAP calls. When the walk first meets an inode
//! of a block group, the used part of that group's inode table is read in one
//! sequential request, and every directory found in it has its blocks read
//! ahead, sorted by position: the walk then costs about one pass over the
//! metadata region instead of a sweep per tree level. Regular files whose
//! extent tree has left the inode are noted: their FIEMAP reads a leaf block
//! out on the data area, so the metadata pass defers them and reads all those
//! leaves in one sorted sweep at the end.
//!
//! Everything here is a hint: a failed or stale read costs time, never
//! correctness, since the walk itself goes through the file system.

use std::collections::HashMap;
use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;

use qtar_sys::BlockDev;

use crate::layout::{BlockMap, Ext4Map, S_IFDIR, S_IFMT, S_IFREG, parse_inode};

/// At most this much of one directory is read ahead.
const DIR_CAP: u64 = 4 << 20;

/// The largest piece asked for in one `readahead(2)`: the kernel caps a call
/// at the device's read-ahead window, 128 KiB by default.
const RA_PIECE: u64 = 128 << 10;

/// What the prefetcher read.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PrefetchStats {
    /// Block groups whose inode table was read.
    pub groups: u64,
    /// Bytes of inode tables read.
    pub inode_table_bytes: u64,
    /// Bytes of directory blocks read ahead.
    pub dir_bytes: u64,
    /// Bytes of extent-tree blocks read ahead for deferred FIEMAPs.
    pub leaf_bytes: u64,
}

pub(crate) struct MetaPrefetch {
    dev: File,
    map: Ext4Map,
    touched: Vec<bool>,
    /// Regular files with an extent tree outside the inode: inode number to
    /// the device offset of the first block its root points to.
    deep: HashMap<u64, u64>,
    pub stats: PrefetchStats,
}

impl MetaPrefetch {
    /// Opens the block device; fails without read permission on it.
    pub fn open(dev: BlockDev, map: Ext4Map) -> io::Result<Self> {
        let dev = crate::layout::open_block_dev(dev)?;
        let groups = map.groups();
        Ok(Self { dev, map, touched: vec![false; groups], deep: HashMap::new(), stats: PrefetchStats::default() })
    }

    /// The walk met inode `ino`: the first time a group is met, read its inode
    /// table and read ahead its directories. When a second group of one flex
    /// group is met (their inode tables lie side by side), the walk is
    /// spreading over it: the rest of the flex group is read in the same pass.
    pub fn touch(&mut self, ino: u64) {
        let Some(g) = self.map.group_of(ino) else { return };
        if self.touched[g] {
            return;
        }
        let flex = self.map.flex_group(g);
        let groups: Vec<usize> = if self.touched[flex.clone()].iter().any(|&t| t) {
            flex.filter(|&h| !self.touched[h]).collect()
        } else {
            vec![g]
        };
        let mut dirs = Vec::new();
        for h in groups {
            self.touched[h] = true;
            self.read_group(h, &mut dirs);
        }
        self.stats.dir_bytes += self.read_ahead(dirs);
    }

    /// Reads group `g`'s inode table, notes its deep files, and adds the
    /// blocks of its directories to `dirs`.
    fn read_group(&mut self, g: usize, dirs: &mut Vec<(u64, u64)>) {
        let Some((first_ino, off, len)) = self.map.used_inode_table(g) else { return };
        let mut table = vec![0u8; len as usize];
        if self.dev.read_exact_at(&mut table, off).is_err() {
            return;
        }
        self.stats.groups += 1;
        self.stats.inode_table_bytes += len;
        let bs = self.map.block_size();
        for (i, raw) in table.chunks_exact(self.map.inode_size() as usize).enumerate() {
            let Some(inode) = parse_inode(raw) else { continue };
            match (inode.mode & S_IFMT, inode.map) {
                (S_IFDIR, BlockMap::Extents(v)) => {
                    let mut budget = DIR_CAP;
                    for (b, n) in v {
                        let n = (n * bs).min(budget);
                        budget -= n;
                        if n > 0 {
                            dirs.push((b * bs, n));
                        }
                    }
                }
                (S_IFDIR, BlockMap::Index(v)) => dirs.extend(v.into_iter().map(|b| (b * bs, bs))),
                (S_IFREG, BlockMap::Index(v)) => {
                    if let Some(&leaf) = v.first() {
                        self.deep.insert(first_ino + i as u64, leaf * bs);
                    }
                }
                _ => {}
            }
        }
    }

    /// Where the FIEMAP of regular file `ino` would read an extent block, if
    /// it would.
    pub fn leaf_of(&self, ino: u64) -> Option<u64> {
        self.deep.get(&ino).copied()
    }

    /// Reads ahead the extent blocks at these device offsets, in order.
    pub fn read_leaves(&mut self, offsets: impl IntoIterator<Item = u64>) {
        let bs = self.map.block_size();
        let n = self.read_ahead(offsets.into_iter().map(|o| (o, bs)).collect());
        self.stats.leaf_bytes += n;
    }

    /// Starts reading `ranges` (device offset, length) into the cache, lowest
    /// first, touching ranges merged. Returns the bytes asked for.
    fn read_ahead(&self, mut ranges: Vec<(u64, u64)>) -> u64 {
        ranges.sort_unstable();
        let mut merged: Vec<(u64, u64)> = Vec::with_capacity(ranges.len());
        for (off, len) in ranges {
            match merged.last_mut() {
                Some((o, l)) if off <= *o + *l => *l = (*l).max(off + len - *o),
                _ => merged.push((off, len)),
            }
        }
        let mut total = 0;
        for (off, len) in merged {
            // The kernel reads at most the device's read-ahead size per call,
            // so longer ranges are asked for a piece at a time (the block
            // layer merges the pieces again).
            let mut at = off;
            while at < off + len {
                let n = (off + len - at).min(RA_PIECE);
                // Advice only: a failure costs speed, never correctness.
                if qtar_sys::readahead(&self.dev, at, n as usize).is_ok() {
                    total += n;
                }
                at += n;
            }
        }
        total
    }
}
