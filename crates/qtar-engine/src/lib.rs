//! Read many files in the order the disk holds them.
//!
//! Archivers, copiers and backup tools usually read files in directory order,
//! which on a disk is scattered: each file costs a seek, and a program that
//! keeps one request in flight gives the kernel's I/O scheduler nothing to
//! sort. This crate schedules the I/O before the kernel sees it:
//!
//! 1. **Metadata pass.** Directories and inodes are read in position order
//!    with a C-SCAN [`elevator`]: inode numbers (which follow disk position on
//!    ext4 and XFS), or, when the ext4 device is readable, exact byte offsets
//!    of inode tables and of directory blocks (FIEMAP). Directories found
//!    behind the head wait for the next sweep. With a readable ext4 device,
//!    the inode tables and directory blocks the walk will need are read from
//!    the device first, in position order, so the walk is served from the
//!    cache ([`PrefetchStats`] says what was read); extent blocks of
//!    fragmented files are read in one sorted sweep after the walk.
//! 2. **Data pass.** A sweep over the device: files are admitted in the order
//!    of their first extent (FIEMAP), their extents read ahead in device
//!    order a window ahead of the reader ([`Prefetch`]), and handed out in the
//!    order of their last extent.
//!
//! A [`Walk`] builds a [`Plan`] (the metadata pass), which lists every entry in
//! read order before any data is read; [`Plan::reader`] then yields each entry
//! with its file open.
//!
//! ```
//! use sha2::{Digest, Sha256};
//! # let dir = tempfile::tempdir().unwrap();
//! # std::fs::write(dir.path().join("a"), b"hello").unwrap();
//! # std::fs::create_dir(dir.path().join("d")).unwrap();
//! # std::fs::write(dir.path().join("d/b"), b"world").unwrap();
//! // Hash every file under a directory, reading in disk order.
//! let plan = qtar_engine::Walk::new().root(dir.path()).plan().unwrap();
//! for err in plan.errors() {
//!     eprintln!("{err}");
//! }
//! for item in plan.reader() {
//!     let item = item.unwrap();
//!     if let Some(mut file) = item.file {
//!         let mut h = Sha256::new();
//!         std::io::copy(&mut file, &mut h).unwrap();
//!         println!("{:x}  {}", h.finalize(), item.entry.path().display());
//!     }
//! }
//! ```
#![deny(missing_docs)]
#![forbid(unsafe_code)]

pub mod elevator;
mod error;
pub mod layout;
mod meta;
mod plan;
mod prefetch;
mod read;
mod scan;
mod tree;

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

pub use error::{Error, Op, strip_os_suffix};
pub use meta::{FileKind, Meta, Timestamp};
pub use plan::{Entry, Order, OrderUsed, Plan};
pub use prefetch::PrefetchStats;
pub use read::{Item, Prefetch, Reader};

use layout::{Ext4Map, FsKind, KeySpace};
use qtar_sys::{BlockDev, OFlags, ResolveFlags};
use scan::{Roots, Scan, ScanConfig};
use tree::{DataKey, NONE, Tree, state};

/// Builds a [`Plan`]: which entries, and in which order.
///
/// The defaults match `tar -c`: symlinks are archived as links (not followed),
/// hard links are detected, all file systems are crossed, and the order is
/// [`Order::Disk`].
pub struct Walk {
    /// (where to find it, what to name it)
    roots: Vec<(PathBuf, Vec<u8>)>,
    order: Order,
    follow_links: bool,
    one_file_system: bool,
    hard_links: bool,
    workers: Option<usize>,
    depth: Option<usize>,
    prefetch: Option<Prefetch>,
    filter: Option<Box<scan::NameFilter>>,
    exact_layout: bool,
    rotational: Option<bool>,
}

impl Default for Walk {
    fn default() -> Self {
        Self::new()
    }
}

impl Walk {
    /// A walk with no roots and the defaults.
    pub fn new() -> Self {
        Self {
            roots: Vec::new(),
            order: Order::Disk,
            follow_links: false,
            one_file_system: false,
            hard_links: true,
            workers: None,
            depth: None,
            prefetch: None,
            filter: None,
            exact_layout: true,
            rotational: None,
        }
    }

    /// Adds a root: a directory to walk, or a single file. Entries under it are
    /// named by this path plus `/name` per level.
    pub fn root(self, path: impl AsRef<Path>) -> Self {
        let name = path.as_ref().as_os_str().as_bytes().to_vec();
        self.root_as(path, name)
    }

    /// Adds a root found at `path` whose entries are named `name`, `name/a`,
    /// … (like `tar -C DIR NAME`, where `path` is `DIR/NAME`).
    pub fn root_as(mut self, path: impl AsRef<Path>, name: impl Into<Vec<u8>>) -> Self {
        self.roots.push((path.as_ref().to_path_buf(), name.into()));
        self
    }

    /// Adds several roots.
    pub fn roots<P: AsRef<Path>>(mut self, paths: impl IntoIterator<Item = P>) -> Self {
        for p in paths {
            self = self.root(p);
        }
        self
    }

    /// The order to plan entries in (default [`Order::Disk`]).
    pub fn order(mut self, order: Order) -> Self {
        self.order = order;
        self
    }

    /// Follow symbolic links, roots included (`tar -h`, `cp -L`). Default: off.
    pub fn follow_links(mut self, yes: bool) -> Self {
        self.follow_links = yes;
        self
    }

    /// Do not descend into directories on other file systems (the directory
    /// entry itself is still planned). Default: off.
    pub fn one_file_system(mut self, yes: bool) -> Self {
        self.one_file_system = yes;
        self
    }

    /// Detect hard links, so later names of an inode point at the first
    /// ([`Entry::hard_link_target`]). Default: on.
    pub fn hard_links(mut self, yes: bool) -> Self {
        self.hard_links = yes;
        self
    }

    /// Metadata worker threads. Default: 8 on a non-rotational device; on a
    /// rotational one, 4 when the ext4 metadata prefetch runs (the walk is
    /// then served from the cache), else 1, since several threads doing
    /// synchronous reads interleave their positions.
    pub fn workers(mut self, n: usize) -> Self {
        self.workers = Some(n.max(1));
        self
    }

    /// Metadata requests kept in flight (default: twice the workers).
    pub fn queue_depth(mut self, n: usize) -> Self {
        self.depth = Some(n.max(1));
        self
    }

    /// The data pass's prefetch window (default by device:
    /// [`Prefetch::ROTATIONAL`] or [`Prefetch::SOLID_STATE`]).
    pub fn prefetch(mut self, p: Prefetch) -> Self {
        self.prefetch = Some(p);
        self
    }

    /// Use exact ext4 positions (superblock and group descriptors read from the
    /// block device, which needs read access to it) when possible. Default: on.
    pub fn exact_layout(mut self, yes: bool) -> Self {
        self.exact_layout = yes;
        self
    }

    /// Treat the device as rotational (`true`) or not (`false`) instead of
    /// asking sysfs, which picks the defaults of [`Walk::workers`] and
    /// [`Walk::prefetch`]. Useful where sysfs is wrong: loop devices over
    /// files, some virtual disks.
    pub fn assume_rotational(mut self, yes: bool) -> Self {
        self.rotational = Some(yes);
        self
    }

    /// Skips entries for which `keep(path, kind)` returns false, before they
    /// are stat-ed; a skipped directory is not descended into. `path` is the
    /// full path as named by its root, `kind` is from the directory entry
    /// (possibly [`FileKind::Unknown`]). Roots are not filtered.
    pub fn filter(mut self, keep: impl Fn(&[u8], FileKind) -> bool + Send + Sync + 'static) -> Self {
        self.filter = Some(Box::new(keep));
        self
    }

    /// Runs the metadata pass and returns the plan. Errors on individual
    /// entries (including roots that cannot be stat-ed) are collected in
    /// [`Plan::errors`]; this only fails if there are no roots.
    pub fn plan(self) -> Result<Plan, Error> {
        if self.roots.is_empty() {
            return Err(Error::new(
                "",
                Op::Stat,
                std::io::Error::new(std::io::ErrorKind::InvalidInput, "no roots given"),
            ));
        }
        let mut tree = Tree::default();
        let mut errors = Vec::new();
        let mut fds = Vec::new();
        let mut root_dirs = Vec::new();
        let mut first_dev: Option<BlockDev> = None;
        let mut fs_kind: Option<FsKind> = None;
        let disk = self.order == Order::Disk;
        for (i, (root, name)) in self.roots.iter().enumerate() {
            let bytes = root.as_os_str().as_bytes();
            let st = match qtar_sys::statx_at(rustix::fs::CWD, bytes, self.follow_links) {
                Ok(st) => st,
                Err(e) => {
                    errors.push(Error::new(PathBuf::from(OsStr::from_bytes(name)), Op::Stat, e));
                    fds.push(None);
                    continue;
                }
            };
            let meta = Meta::from_statx(&st);
            let id = tree.add(NONE, i as u32, name, meta.ino);
            let node = &mut tree.nodes[id as usize];
            node.set_meta(&meta);
            node.state |= state::STATED | state::ROOT;
            first_dev.get_or_insert(BlockDev::of(&st));
            if meta.is_dir() {
                let flags = OFlags::PATH
                    | OFlags::DIRECTORY
                    | if self.follow_links { OFlags::empty() } else { OFlags::NOFOLLOW };
                match qtar_sys::open_noatime(rustix::fs::CWD, bytes, flags, ResolveFlags::empty()) {
                    Ok(fd) => {
                        fs_kind.get_or_insert_with(|| FsKind::of(&fd).unwrap_or(FsKind::Other(0)));
                        fds.push(Some(fd));
                        root_dirs.push(id);
                    }
                    Err(e) => {
                        errors.push(Error::new(PathBuf::from(OsStr::from_bytes(name)), Op::OpenDir, e));
                        fds.push(None);
                    }
                }
            } else {
                if meta.is_file() && disk {
                    let data = match qtar_sys::open_noatime(
                        rustix::fs::CWD,
                        bytes,
                        OFlags::RDONLY | OFlags::NONBLOCK,
                        ResolveFlags::empty(),
                    ) {
                        Ok(fd) if meta.size > 0 => {
                            fs_kind.get_or_insert_with(|| FsKind::of(&fd).unwrap_or(FsKind::Other(0)));
                            scan::data_key(&fd)
                        }
                        Ok(_) => DataKey::Free,
                        Err(_) => DataKey::Unknown,
                    };
                    tree.nodes[id as usize].set_data(data);
                }
                fds.push(None);
            }
        }
        let rotational = self.rotational.or_else(|| first_dev.and_then(qtar_sys::rotational));
        let solid = rotational == Some(false);
        let fs_kind = fs_kind.unwrap_or(FsKind::Other(0));
        let keys = if !disk || !fs_kind.inode_order_meaningful() {
            KeySpace::Discovery
        } else {
            match (fs_kind, first_dev, self.exact_layout) {
                (FsKind::Ext, Some(dev), true) => Ext4Map::probe(dev).map_or(KeySpace::Inode, KeySpace::Bytes),
                _ => KeySpace::Inode,
            }
        };
        let meta_prefetch = match (&keys, first_dev) {
            (KeySpace::Bytes(map), Some(dev)) => prefetch::MetaPrefetch::open(dev, map.clone()).ok(),
            _ => None,
        };
        // On a disk that seeks and without the metadata prefetch, one thread
        // walks the elevator: with four, each thread's synchronous reads
        // interleave with the others' and the modelled disk time of the
        // quick lab run grew from 3.37 s to 9.23 s (clean) and from 10.39 s
        // to 16.68 s (aged). With the prefetch the walk is served from the
        // cache and four threads cost no seeks but save wall time; flash
        // gains from parallelism (benches/README.md).
        let workers = self.workers.unwrap_or(match (disk, solid, meta_prefetch.is_some()) {
            (true, true, _) => 8,
            (true, false, true) => 4,
            _ => 1,
        });
        let cfg = ScanConfig {
            follow_links: self.follow_links,
            one_file_system: self.one_file_system,
            want_data_keys: disk,
            workers,
            depth: self.depth.unwrap_or(workers * 2),
        };
        let roots = Arc::new(Roots { fds });
        let mut scan = Scan::new(cfg, keys, tree, self.filter.as_deref());
        scan.prefetch = meta_prefetch;
        scan.run(Arc::clone(&roots), &root_dirs);
        let prefetch_stats = scan.prefetch.as_ref().map(|p| p.stats);
        errors.append(&mut scan.errors);
        let fallback = if scan.fiemap_unsupported {
            if fs_kind.inode_order_meaningful() { OrderUsed::Inode } else { OrderUsed::Discovery }
        } else {
            OrderUsed::Physical
        };
        let tree = scan.tree;
        let (order, links, used) = plan::arrange(&tree, self.order, fallback, self.hard_links);
        let admit = if used == OrderUsed::Physical { plan::admission(&tree, &order, &links) } else { Vec::new() };
        let prefetch = self.prefetch.unwrap_or(if solid { Prefetch::SOLID_STATE } else { Prefetch::ROTATIONAL });
        let root_paths = self.roots.into_iter().map(|(p, _)| p).collect();
        Ok(Plan {
            tree,
            root_paths,
            order,
            links,
            errors,
            used,
            roots,
            rotational,
            follow_links: self.follow_links,
            prefetch,
            admit,
            prefetch_stats,
        })
    }
}

/// A path's bytes as an `OsStr` path, for callers holding raw names.
pub fn path_from_bytes(b: &[u8]) -> &Path {
    Path::new(OsStr::from_bytes(b))
}
