//! The plan: every entry found, in the order its data will be read.

use std::collections::HashMap;
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;
use std::sync::Arc;

use crate::error::Error;
use crate::meta::{FileKind, Meta};
use crate::scan::Roots;
use crate::tree::{DataKey, NONE, Tree, state};

/// The order to plan entries in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Order {
    /// Disk order (the default): entries whose data needs no seek first, then
    /// regular files by the physical offset of their first extent (FIEMAP),
    /// then directories, deepest first. Metadata is read with the C-SCAN
    /// elevator. Falls back to inode order, then discovery order, where the
    /// file system cannot say where data lies.
    #[default]
    Disk,
    /// GNU tar's `--sort=inode`: a depth-first walk, each directory's entries
    /// sorted by inode number.
    Inode,
    /// GNU tar's `--sort=name`: a depth-first walk, each directory's entries
    /// sorted by name (byte order). Reproducible.
    Name,
    /// GNU tar's `--sort=none`: a depth-first walk in the order the file
    /// system lists directory entries.
    None,
}

/// The order a plan's data is actually read in, and why.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OrderUsed {
    /// Physical order from FIEMAP extents.
    Physical,
    /// Inode order: the file system has no FIEMAP, but inode numbers follow
    /// disk position.
    Inode,
    /// Discovery order: neither FIEMAP nor meaningful inode numbers.
    Discovery,
    /// Name order, as asked (`Order::Name`).
    Name,
    /// Depth-first with each directory sorted by inode, as asked (`Order::Inode`).
    InodePerDirectory,
    /// Depth-first in directory-listing order, as asked (`Order::None`).
    DirectoryListing,
}

impl std::fmt::Display for OrderUsed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            OrderUsed::Physical => "disk order (physical extents, FIEMAP)",
            OrderUsed::Inode => "inode order (no FIEMAP on this file system)",
            OrderUsed::Discovery => "discovery order (no FIEMAP, and inode numbers do not follow disk position)",
            OrderUsed::Name => "name order",
            OrderUsed::InodePerDirectory => "inode order within each directory",
            OrderUsed::DirectoryListing => "directory listing order",
        })
    }
}

/// Every entry found under the roots, in read order, before any file data is
/// read. Get one from [`crate::Walk::plan`]; read data with [`Plan::reader`].
pub struct Plan {
    pub(crate) tree: Tree,
    pub(crate) order: Vec<u32>,
    /// For each position in `order`: the position of the hard link's target, or NONE.
    pub(crate) links: Vec<u32>,
    pub(crate) errors: Vec<Error>,
    pub(crate) used: OrderUsed,
    pub(crate) roots: Arc<Roots>,
    /// Where each root is on the file system (its entries may be named otherwise).
    pub(crate) root_paths: Vec<PathBuf>,
    pub(crate) rotational: Option<bool>,
    pub(crate) follow_links: bool,
    pub(crate) prefetch: crate::Prefetch,
    /// Positions of the files with physical extents, by their first extent:
    /// the order the data pass admits them into its sweep.
    pub(crate) admit: Vec<u32>,
    /// What the metadata prefetch read, when it ran.
    pub(crate) prefetch_stats: Option<crate::PrefetchStats>,
}

/// One planned entry.
#[derive(Clone, Copy)]
pub struct Entry<'p> {
    plan: &'p Plan,
    pos: usize,
}

impl<'p> Entry<'p> {
    pub(crate) fn node(&self) -> u32 {
        self.plan.order[self.pos]
    }

    /// The path, as the root was given plus `/name` for each level below it.
    pub fn path_bytes(&self) -> Vec<u8> {
        self.plan.tree.path(self.node())
    }

    /// [`Entry::path_bytes`] as a `PathBuf`.
    pub fn path(&self) -> PathBuf {
        PathBuf::from(OsStr::from_bytes(&self.path_bytes()))
    }

    /// The entry's last component (the root as given, for a root).
    pub fn file_name(&self) -> &'p [u8] {
        self.plan.tree.name(self.node())
    }

    /// Metadata from the metadata pass.
    pub fn meta(&self) -> Meta {
        self.plan.tree.nodes[self.node() as usize].meta().expect("planned entries are stat-ed")
    }

    /// The kind of file.
    pub fn kind(&self) -> FileKind {
        self.meta().kind
    }

    /// Position in the plan.
    pub fn index(&self) -> usize {
        self.pos
    }

    /// Which root (index into the roots given to the builder) this is under.
    pub fn root_index(&self) -> usize {
        self.plan.tree.nodes[self.node() as usize].root as usize
    }

    /// Whether this entry is one of the roots.
    pub fn is_root(&self) -> bool {
        self.plan.tree.nodes[self.node() as usize].state & state::ROOT != 0
    }

    /// Depth below its root (0 for a root).
    pub fn depth(&self) -> usize {
        self.plan.tree.depth(self.node()) as usize
    }

    /// For a second or later name of the same inode: the earlier entry that
    /// carries the data. Always earlier in the plan.
    pub fn hard_link_target(&self) -> Option<Entry<'p>> {
        let t = self.plan.links[self.pos];
        (t != NONE).then_some(Entry { plan: self.plan, pos: t as usize })
    }

    /// A directory on another file system that was not descended into
    /// (`one_file_system`).
    pub fn is_other_file_system(&self) -> bool {
        self.plan.tree.nodes[self.node() as usize].state & state::OTHER_FS != 0
    }

    /// The lowest and highest device byte offsets of the extents the data
    /// pass reads, when known. Files are planned by the highest: that is when
    /// a sweep has all of them.
    pub fn physical_span(&self) -> Option<(u64, u64)> {
        match self.plan.tree.nodes[self.node() as usize].data() {
            DataKey::At { first, last } => Some((first, last)),
            _ => None,
        }
    }

    /// The device byte offset where the data starts, when known.
    pub fn physical_offset(&self) -> Option<u64> {
        match self.plan.tree.nodes[self.node() as usize].data() {
            DataKey::At { first, .. } => Some(first),
            _ => None,
        }
    }

    /// Whether reading this entry's data needs the device (a regular file with
    /// data not inline, delayed or unwritten).
    pub fn needs_read(&self) -> bool {
        self.meta().is_file()
            && self.meta().size > 0
            && self.hard_link_target().is_none()
            && self.plan.tree.nodes[self.node() as usize].data() != DataKey::Free
    }

    /// Reads the target of a symbolic link.
    pub fn read_link(&self) -> Result<PathBuf, Error> {
        let node = self.node();
        let path = self.path();
        let n = &self.plan.tree.nodes[node as usize];
        let res = match &self.plan.roots.fds[n.root as usize] {
            Some(root) if n.parent != NONE => {
                let rel = self.plan.tree.rel(node);
                let resolve = if self.plan.follow_links {
                    rustix::fs::ResolveFlags::empty()
                } else {
                    rustix::fs::ResolveFlags::NO_SYMLINKS | rustix::fs::ResolveFlags::NO_MAGICLINKS
                };
                let (dir, name) = match rel.iter().rposition(|&b| b == b'/') {
                    Some(i) => (
                        crate::scan::open_rel(
                            root,
                            &rel[..i],
                            rustix::fs::OFlags::PATH | rustix::fs::OFlags::DIRECTORY,
                            resolve,
                        ),
                        rel[i + 1..].to_vec(),
                    ),
                    None => (
                        rustix::fs::openat(
                            root,
                            c".",
                            rustix::fs::OFlags::PATH | rustix::fs::OFlags::DIRECTORY,
                            rustix::fs::Mode::empty(),
                        )
                        .map_err(std::io::Error::from),
                        rel.clone(),
                    ),
                };
                dir.and_then(|d| rustix::fs::readlinkat(&d, name.as_slice(), Vec::new()).map_err(std::io::Error::from))
                    .map(|c| PathBuf::from(OsStr::from_bytes(c.as_bytes())))
            }
            _ => std::fs::read_link(&self.plan.root_paths[n.root as usize]),
        };
        res.map_err(|e| Error::new(path, crate::error::Op::ReadLink, e))
    }
}

impl std::fmt::Debug for Entry<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Entry")
            .field("path", &self.path())
            .field("kind", &self.kind())
            .field("size", &self.meta().size)
            .finish()
    }
}

impl Plan {
    /// Number of entries.
    pub fn len(&self) -> usize {
        self.order.len()
    }

    /// Whether the plan has no entries.
    pub fn is_empty(&self) -> bool {
        self.order.is_empty()
    }

    /// The entry at `pos`.
    pub fn get(&self, pos: usize) -> Option<Entry<'_>> {
        (pos < self.order.len()).then_some(Entry { plan: self, pos })
    }

    /// All entries, in plan order.
    pub fn entries(&self) -> impl ExactSizeIterator<Item = Entry<'_>> + '_ {
        (0..self.order.len()).map(move |pos| Entry { plan: self, pos })
    }

    /// Errors met during the metadata pass (unreadable directories, vanished
    /// files, …). The entries concerned are left out of the plan.
    pub fn errors(&self) -> &[Error] {
        &self.errors
    }

    /// The order the data will be read in.
    pub fn order_used(&self) -> OrderUsed {
        self.used
    }

    /// Whether the device under the first root is rotational (`None`: unknown).
    pub fn rotational(&self) -> Option<bool> {
        self.rotational
    }

    /// What the metadata pass read ahead from the block device (ext4 with a
    /// readable device only; `None` otherwise).
    pub fn prefetch_stats(&self) -> Option<crate::PrefetchStats> {
        self.prefetch_stats
    }

    /// Bytes of heap the plan holds (the tree, its names and the order), for
    /// memory accounting.
    pub fn heap_bytes(&self) -> usize {
        self.tree.nodes.capacity() * std::mem::size_of::<crate::tree::Node>()
            + self.tree.names.capacity()
            + self.order.capacity() * 4
            + self.links.capacity() * 4
    }
}

/// Builds the order for a finished scan.
pub(crate) fn arrange(
    tree: &Tree,
    order: Order,
    fallback: OrderUsed,
    hard_links: bool,
) -> (Vec<u32>, Vec<u32>, OrderUsed) {
    let live = |id: u32| {
        let n = &tree.nodes[id as usize];
        n.state & state::STATED != 0 && n.state & state::DROPPED == 0
    };
    let (seq, used): (Vec<u32>, OrderUsed) = match order {
        Order::Disk => {
            let mut free = Vec::new();
            // Node ids only (4 bytes each, not 16 with their keys): sorting
            // a million entries should not cost more memory than the plan.
            let mut data: Vec<u32> = Vec::new();
            let key = |id: u32| {
                let n = &tree.nodes[id as usize];
                match (fallback, n.data()) {
                    // Emitted when the sweep has read all of it: by its last
                    // extent. The reader admits it at its first.
                    (OrderUsed::Physical, DataKey::At { last, .. }) => last,
                    (OrderUsed::Physical | OrderUsed::Inode, _) => n.ino,
                    _ => id as u64,
                }
            };
            let mut dirs: Vec<(u32, u32)> = Vec::new();
            for id in 0..tree.nodes.len() as u32 {
                if !live(id) {
                    continue;
                }
                let n = &tree.nodes[id as usize];
                let m = n.meta().expect("stated");
                match m.kind {
                    FileKind::Dir => dirs.push((tree.depth(id), id)),
                    FileKind::File if n.data() == DataKey::Free => free.push(id),
                    FileKind::File => data.push(id),
                    _ => free.push(id),
                }
            }
            // Ties (hard-linked names of one inode share a key) are broken by
            // inode, then path, so a plan depends only on the tree and its layout,
            // not on which metadata worker finished first.
            let tie = |a: u32, b: u32| {
                let (na, nb) = (&tree.nodes[a as usize], &tree.nodes[b as usize]);
                na.ino.cmp(&nb.ino).then_with(|| tree.path(a).cmp(&tree.path(b)))
            };
            data.sort_unstable_by(|&a, &b| key(a).cmp(&key(b)).then_with(|| tie(a, b)));
            // Entries that need no data read go first, sorted by path so each
            // directory's entries are contiguous: GNU tar marks a directory to be
            // restored after its delayed symlinks (absolute or `..` targets)
            // only while that directory is still pending, which path order
            // guarantees; bsdtar sets the time of a directory that already
            // exists when its member arrives, so nothing may be created in a
            // directory after it, which directories-last guarantees.
            free.sort_unstable_by_key(|&a| tree.path(a));
            dirs.sort_unstable_by(|a, b| b.0.cmp(&a.0).then_with(|| tie(a.1, b.1)));
            let mut seq = free;
            seq.extend(data);
            seq.extend(dirs.into_iter().map(|(_, id)| id));
            (seq, fallback)
        }
        _ => {
            // Depth-first, directory before its contents, like GNU tar.
            let mut children: Vec<Vec<u32>> = vec![Vec::new(); tree.nodes.len()];
            let mut roots = Vec::new();
            for id in 0..tree.nodes.len() as u32 {
                if !live(id) {
                    continue;
                }
                match tree.nodes[id as usize].parent {
                    NONE => roots.push(id),
                    p => children[p as usize].push(id),
                }
            }
            let key_sort = |v: &mut Vec<u32>| match order {
                Order::Name => v.sort_by(|a, b| tree.name(*a).cmp(tree.name(*b))),
                Order::Inode => v.sort_by_key(|a| (tree.nodes[*a as usize].ino, *a)),
                _ => {}
            };
            let mut seq = Vec::new();
            let mut stack: Vec<u32> = roots.into_iter().rev().collect();
            while let Some(id) = stack.pop() {
                seq.push(id);
                let mut c = std::mem::take(&mut children[id as usize]);
                key_sort(&mut c);
                stack.extend(c.into_iter().rev());
            }
            let used = match order {
                Order::Name => OrderUsed::Name,
                Order::Inode => OrderUsed::InodePerDirectory,
                _ => OrderUsed::DirectoryListing,
            };
            (seq, used)
        }
    };
    let mut links = vec![NONE; seq.len()];
    if hard_links {
        let mut first: HashMap<(u64, u64), u32> = HashMap::new();
        for (pos, &id) in seq.iter().enumerate() {
            let m = tree.nodes[id as usize].meta().expect("stated");
            if m.nlink > 1 && !m.is_dir() {
                match first.entry((m.dev, m.ino)) {
                    std::collections::hash_map::Entry::Occupied(o) => links[pos] = *o.get(),
                    std::collections::hash_map::Entry::Vacant(v) => {
                        v.insert(pos as u32);
                    }
                }
            }
        }
    }
    (seq, links, used)
}

/// The admission order of the physical sweep: positions of the files with
/// extents, sorted by their first extent.
pub(crate) fn admission(tree: &Tree, seq: &[u32], links: &[u32]) -> Vec<u32> {
    let first = |pos: u32| match tree.nodes[seq[pos as usize] as usize].data() {
        DataKey::At { first, .. } => Some(first),
        _ => None,
    };
    let mut v: Vec<u32> =
        (0..seq.len() as u32).filter(|&pos| links[pos as usize] == NONE && first(pos).is_some()).collect();
    v.sort_unstable_by_key(|&pos| (first(pos), pos));
    v
}
