//! Compact storage of the discovered tree: each node is its parent's index plus
//! a name in one shared byte buffer, so a path costs its name's bytes once.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;

use crate::meta::{Meta, Timestamp};

pub(crate) const NONE: u32 = u32::MAX;

/// Where the data of a regular file starts, for the data pass.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum DataKey {
    /// Not a file with data (directory, symlink, device, …) or not planned.
    None,
    /// Reading it costs no seek: empty, inline, delayed allocation, unwritten.
    Free,
    /// The lowest and highest device byte offsets of the extents that need a
    /// read: the data pass starts reading the file at `first` and has all of
    /// it once its sweep passes `last`.
    At {
        /// Lowest extent offset.
        first: u64,
        /// Highest extent offset.
        last: u64,
    },
    /// FIEMAP works, but the file system did not say where (`UNKNOWN` extents
    /// that are not delayed allocations).
    Unknown,
    /// The file system has no FIEMAP (or it failed for this file).
    NoFiemap,
}

/// Per-node state bits.
pub(crate) mod state {
    /// `statx` succeeded: `meta` is valid.
    pub const STATED: u8 = 1;
    /// Excluded or failed: not part of the plan.
    pub const DROPPED: u8 = 2;
    /// A directory on another file system, not descended (`--one-file-system`).
    pub const OTHER_FS: u8 = 4;
    /// A root given by the caller.
    pub const ROOT: u8 = 8;
}

/// One discovered entry, about 130 bytes: `statx` fields packed without the
/// padding of [`Meta`], the data key in one word, the name stored elsewhere.
#[derive(Debug, Clone)]
pub(crate) struct Node {
    pub parent: u32,
    pub name_len: u32,
    pub name_off: u64,
    pub ino: u64,
    data: u64,
    last: u64,
    size: u64,
    blocks: u64,
    dev: u64,
    secs: [i64; 3],
    nsecs: [u32; 3],
    mode: u32,
    uid: u32,
    gid: u32,
    nlink: u32,
    rdev: [u32; 2],
    pub root: u16,
    pub state: u8,
}

const KEY_NONE: u64 = u64::MAX;
const KEY_FREE: u64 = u64::MAX - 1;
const KEY_UNKNOWN: u64 = u64::MAX - 2;
const KEY_NO_FIEMAP: u64 = u64::MAX - 3;

impl Node {
    /// The metadata, once `statx` has filled it in.
    pub fn meta(&self) -> Option<Meta> {
        (self.state & state::STATED != 0).then(|| {
            let ts = |i: usize| Timestamp { sec: self.secs[i], nsec: self.nsecs[i] };
            Meta {
                kind: crate::meta::FileKind::from_mode(self.mode),
                mode: self.mode,
                uid: self.uid,
                gid: self.gid,
                nlink: self.nlink,
                size: self.size,
                blocks: self.blocks,
                ino: self.ino,
                dev: self.dev,
                rdev_major: self.rdev[0],
                rdev_minor: self.rdev[1],
                atime: ts(0),
                mtime: ts(1),
                ctime: ts(2),
            }
        })
    }

    pub fn set_meta(&mut self, m: &Meta) {
        self.mode = m.mode;
        self.uid = m.uid;
        self.gid = m.gid;
        self.nlink = m.nlink;
        self.size = m.size;
        self.blocks = m.blocks;
        self.ino = m.ino;
        self.dev = m.dev;
        self.rdev = [m.rdev_major, m.rdev_minor];
        for (i, t) in [m.atime, m.mtime, m.ctime].into_iter().enumerate() {
            self.secs[i] = t.sec;
            self.nsecs[i] = t.nsec;
        }
        self.state |= state::STATED;
    }

    pub fn data(&self) -> DataKey {
        match self.data {
            KEY_NONE => DataKey::None,
            KEY_FREE => DataKey::Free,
            KEY_UNKNOWN => DataKey::Unknown,
            KEY_NO_FIEMAP => DataKey::NoFiemap,
            first => DataKey::At { first, last: self.last },
        }
    }

    pub fn set_data(&mut self, k: DataKey) {
        self.data = match k {
            DataKey::None => KEY_NONE,
            DataKey::Free => KEY_FREE,
            DataKey::Unknown => KEY_UNKNOWN,
            DataKey::NoFiemap => KEY_NO_FIEMAP,
            // Offsets this close to 2^64 do not exist on any device.
            DataKey::At { first, last } => {
                self.last = last;
                first.min(KEY_NO_FIEMAP - 1)
            }
        };
    }
}

#[derive(Debug, Default)]
pub(crate) struct Tree {
    pub nodes: Vec<Node>,
    pub names: Vec<u8>,
}

impl Tree {
    pub fn add(&mut self, parent: u32, root: u32, name: &[u8], ino: u64) -> u32 {
        let id = self.nodes.len() as u32;
        // Grow by a quarter, not double: the tree is most of a plan's memory.
        if self.nodes.len() == self.nodes.capacity() {
            self.nodes.reserve_exact((self.nodes.capacity() / 4).max(4096));
        }
        if self.names.capacity() - self.names.len() < name.len() {
            self.names.reserve_exact((self.names.capacity() / 4).max(64 << 10).max(name.len()));
        }
        self.nodes.push(Node {
            parent,
            name_len: name.len() as u32,
            name_off: self.names.len() as u64,
            ino,
            data: KEY_NONE,
            last: 0,
            size: 0,
            blocks: 0,
            dev: 0,
            secs: [0; 3],
            nsecs: [0; 3],
            mode: 0,
            uid: 0,
            gid: 0,
            nlink: 0,
            rdev: [0; 2],
            root: u16::try_from(root).expect("at most 65535 roots"),
            state: 0,
        });
        self.names.extend_from_slice(name);
        id
    }

    pub fn name(&self, id: u32) -> &[u8] {
        let n = &self.nodes[id as usize];
        &self.names[n.name_off as usize..n.name_off as usize + n.name_len as usize]
    }

    fn chain(&self, mut id: u32) -> Vec<u32> {
        let mut v = Vec::new();
        while id != NONE {
            v.push(id);
            id = self.nodes[id as usize].parent;
        }
        v.reverse();
        v
    }

    /// The full path as the caller would name it: the root as given, then
    /// `/name` per level (a root's trailing slashes are not doubled).
    pub fn path(&self, id: u32) -> Vec<u8> {
        let chain = self.chain(id);
        let mut out = Vec::new();
        for (i, &n) in chain.iter().enumerate() {
            let name = self.name(n);
            if i == 0 {
                out.extend_from_slice(name);
            } else {
                while out.len() > 1 && out.ends_with(b"/") {
                    out.pop();
                }
                if !out.ends_with(b"/") {
                    out.push(b'/');
                }
                out.extend_from_slice(name);
            }
        }
        out
    }

    /// The path below the root (empty for the root itself).
    pub fn rel(&self, id: u32) -> Vec<u8> {
        let chain = self.chain(id);
        let mut out = Vec::new();
        for &n in &chain[1..] {
            if !out.is_empty() {
                out.push(b'/');
            }
            out.extend_from_slice(self.name(n));
        }
        out
    }

    pub fn depth(&self, mut id: u32) -> u32 {
        let mut d = 0;
        while self.nodes[id as usize].parent != NONE {
            d += 1;
            id = self.nodes[id as usize].parent;
        }
        d
    }

    pub fn path_buf(&self, id: u32) -> PathBuf {
        PathBuf::from(OsStr::from_bytes(&self.path(id)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_join_like_tar() {
        let mut t = Tree::default();
        let r = t.add(NONE, 0, b"dir/", 1);
        let a = t.add(r, 0, b"a", 2);
        let b = t.add(a, 0, b"b\xff", 3);
        assert_eq!(t.path(b), b"dir/a/b\xff");
        assert_eq!(t.rel(b), b"a/b\xff");
        assert_eq!(t.rel(r), b"");
        assert_eq!(t.depth(b), 2);
        let s = t.add(NONE, 1, b"/", 4);
        let e = t.add(s, 1, b"etc", 5);
        assert_eq!(t.path(e), b"/etc");
        let dot = t.add(NONE, 2, b".", 6);
        let x = t.add(dot, 2, b"x", 7);
        assert_eq!(t.path(x), b"./x");
    }
}
