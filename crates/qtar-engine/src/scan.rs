//! The metadata pass: directories and inodes read in C-SCAN order by a small
//! pool of threads, so the kernel always has several nearby requests to sort.

use std::collections::HashMap;
use std::io;
use std::os::fd::{AsFd, OwnedFd};
use std::sync::Arc;

use crossbeam_channel as chan;
use qtar_sys::{DirReader, FileKind, OFlags, ResolveFlags};

use crate::elevator::Elevator;
use crate::error::{Error, Op};
use crate::layout::KeySpace;
use crate::meta::Meta;
use crate::prefetch::MetaPrefetch;
use crate::tree::{DataKey, NONE, Tree, state};

/// Metadata jobs handed to a worker at once.
const BATCH: usize = 32;

/// Paths longer than this are opened a few components at a time, so names of
/// any length (beyond `PATH_MAX`) work.
const CHUNK: usize = 3072;

/// Settings of one metadata pass.
#[derive(Debug, Clone)]
pub(crate) struct ScanConfig {
    pub follow_links: bool,
    pub one_file_system: bool,
    pub want_data_keys: bool,
    pub workers: usize,
    pub depth: usize,
}

pub(crate) type NameFilter = dyn Fn(&[u8], FileKind) -> bool + Send + Sync;

#[derive(Debug, Clone, Copy)]
enum JobOp {
    Stat,
    ReadDir,
    /// FIEMAP of a regular file whose extent tree is out on the data area,
    /// deferred to a sorted sweep after the walk.
    Fiemap,
}

/// A job waiting in the elevator: a few bytes, so that a million queued stats
/// cost little. It becomes a [`Job`] (with its path) when dispatched.
#[derive(Debug, Clone, Copy)]
struct Pending {
    node: u32,
    op: JobOp,
    hint: FileKind,
    defer_fiemap: bool,
}

impl Pending {
    fn new(node: u32, op: JobOp) -> Self {
        Self { node, op, hint: FileKind::Unknown, defer_fiemap: false }
    }
}

#[derive(Debug)]
struct Job {
    node: u32,
    parent: u32,
    root: u32,
    op: JobOp,
    /// Path below the root.
    rel: Vec<u8>,
    /// Where the last component starts in `rel`.
    name_at: usize,
    /// The type `getdents` reported.
    hint: FileKind,
    /// A stat that leaves FIEMAP for later (the extent tree needs a read).
    defer_fiemap: bool,
}

enum Outcome {
    Stat { meta: Meta, data: DataKey, dir_key: Option<u64>, deferred: bool },
    Entries { names: Vec<u8>, ents: Vec<(u32, u32, u64, FileKind)> },
    Data(DataKey),
}

struct Done {
    node: u32,
    result: Result<Outcome, (Op, io::Error)>,
}

/// Roots: a directory fd per root (`None` for a root that is not a directory).
pub(crate) struct Roots {
    pub fds: Vec<Option<OwnedFd>>,
}

pub(crate) struct Scan<'a> {
    pub cfg: ScanConfig,
    pub keys: KeySpace,
    pub tree: Tree,
    pub errors: Vec<Error>,
    pub filter: Option<&'a NameFilter>,
    pub fiemap_unsupported: bool,
    /// Metadata prefetch from the block device (ext4, readable device).
    pub prefetch: Option<MetaPrefetch>,
    /// Files whose FIEMAP waits for the sweep over extent blocks: (device
    /// offset of the block, node).
    deferred: Vec<(u64, u32)>,
    seq: u64,
}

impl<'a> Scan<'a> {
    pub fn new(cfg: ScanConfig, keys: KeySpace, tree: Tree, filter: Option<&'a NameFilter>) -> Self {
        Self {
            cfg,
            keys,
            tree,
            errors: Vec::new(),
            filter,
            fiemap_unsupported: false,
            prefetch: None,
            deferred: Vec::new(),
            seq: 0,
        }
    }

    fn stat_key(&mut self, ino: u64) -> u64 {
        self.seq += 1;
        match &self.keys {
            KeySpace::Bytes(m) => m.inode_offset(ino).unwrap_or(ino),
            KeySpace::Inode => ino,
            KeySpace::Discovery => self.seq,
        }
    }

    fn dir_key(&mut self, ino: u64, data: Option<u64>) -> u64 {
        match (&self.keys, data) {
            (KeySpace::Bytes(_), Some(off)) => off,
            _ => self.stat_key(ino),
        }
    }

    fn job(&self, p: Pending) -> Job {
        let n = &self.tree.nodes[p.node as usize];
        let rel = self.tree.rel(p.node);
        let name_at = rel.iter().rposition(|&b| b == b'/').map_or(0, |i| i + 1);
        Job {
            node: p.node,
            parent: n.parent,
            root: u32::from(n.root),
            op: p.op,
            rel,
            name_at,
            hint: p.hint,
            defer_fiemap: p.defer_fiemap,
        }
    }

    /// Runs the pass from the given (already stat-ed) root directories.
    ///
    /// Jobs leave the elevator in slices of consecutive positions, dealt round
    /// robin to the workers (job `i` of a slice to worker `i % workers`), so
    /// the requests in flight at any moment are neighbours on the device and
    /// the cost of handing work to a thread is paid once per sub-batch rather
    /// than once per `statx`; `depth` slices are in flight. When the walk is
    /// done, the deferred FIEMAPs run as one more sweep, by the position of
    /// the extent blocks they read.
    pub fn run(&mut self, roots: Arc<Roots>, root_dirs: &[u32]) {
        let workers = self.cfg.workers.max(1);
        let (done_tx, done_rx) = chan::unbounded::<Vec<Done>>();
        let mut elevator: Elevator<Pending> = Elevator::new();
        for &r in root_dirs {
            let ino = self.tree.nodes[r as usize].ino;
            if let Some(p) = &mut self.prefetch {
                p.touch(ino);
            }
            let key = self.dir_key(ino, None);
            elevator.push(key, Pending::new(r, JobOp::ReadDir));
        }
        std::thread::scope(|s| {
            let mut job_txs = Vec::with_capacity(workers);
            for _ in 0..workers {
                let (job_tx, job_rx) = chan::unbounded::<Vec<Job>>();
                job_txs.push(job_tx);
                let done_tx = done_tx.clone();
                let roots = Arc::clone(&roots);
                let cfg = self.cfg.clone();
                let bytes_keys = matches!(self.keys, KeySpace::Bytes(_));
                s.spawn(move || {
                    let mut w = Worker { roots, cfg, bytes_keys, dirs: HashMap::new(), reader: DirReader::default() };
                    for batch in job_rx {
                        let done: Vec<Done> = batch
                            .into_iter()
                            .map(|job| {
                                let node = job.node;
                                Done { node, result: w.run(job) }
                            })
                            .collect();
                        if done_tx.send(done).is_err() {
                            break;
                        }
                    }
                });
            }
            drop(done_tx);
            loop {
                self.drain(&mut elevator, &job_txs, &done_rx);
                if self.deferred.is_empty() {
                    break;
                }
                let mut deferred = std::mem::take(&mut self.deferred);
                deferred.sort_unstable();
                if let Some(p) = &mut self.prefetch {
                    p.read_leaves(deferred.iter().map(|&(off, _)| off));
                }
                for (off, id) in deferred {
                    elevator.push(off, Pending::new(id, JobOp::Fiemap));
                }
            }
            drop(job_txs);
        });
    }

    /// Serves the elevator until it is empty and nothing is in flight.
    fn drain(
        &mut self,
        elevator: &mut Elevator<Pending>,
        job_txs: &[chan::Sender<Vec<Job>>],
        done_rx: &chan::Receiver<Vec<Done>>,
    ) {
        let workers = job_txs.len();
        let mut in_flight = 0usize;
        loop {
            while in_flight < self.cfg.depth.max(1) && !elevator.is_empty() {
                let slice: Vec<Pending> =
                    std::iter::from_fn(|| elevator.pop().map(|(_, j)| j)).take(BATCH * workers).collect();
                let mut subs: Vec<Vec<Job>> = (0..workers).map(|_| Vec::new()).collect();
                for (i, p) in slice.into_iter().enumerate() {
                    subs[i % workers].push(self.job(p));
                }
                for (tx, sub) in job_txs.iter().zip(subs) {
                    if !sub.is_empty() {
                        tx.send(sub).expect("workers alive");
                        in_flight += 1;
                    }
                }
            }
            if in_flight == 0 {
                break;
            }
            let done = done_rx.recv().expect("workers alive");
            in_flight -= 1;
            for d in done {
                self.complete(d, elevator);
            }
        }
    }

    fn complete(&mut self, done: Done, elevator: &mut Elevator<Pending>) {
        let id = done.node;
        match done.result {
            Err((op, e)) => {
                let n = &mut self.tree.nodes[id as usize];
                if op == Op::Stat {
                    n.state |= state::DROPPED;
                }
                self.errors.push(Error::new(self.tree.path_buf(id), op, e));
            }
            Ok(Outcome::Stat { meta, data, dir_key, deferred }) => {
                let root_dev = self.root_dev(id);
                let n = &mut self.tree.nodes[id as usize];
                n.set_meta(&meta);
                n.state |= state::STATED;
                n.set_data(data);
                if data == DataKey::NoFiemap && meta.is_file() && meta.size > 0 {
                    self.fiemap_unsupported = true;
                }
                if deferred {
                    let leaf = self.prefetch.as_ref().and_then(|p| p.leaf_of(meta.ino));
                    self.deferred.push((leaf.unwrap_or(u64::MAX), id));
                }
                if meta.is_dir() {
                    if self.cfg.one_file_system && Some(meta.dev) != root_dev {
                        n.state |= state::OTHER_FS;
                    } else {
                        let key = self.dir_key(meta.ino, dir_key);
                        elevator.push(key, Pending::new(id, JobOp::ReadDir));
                    }
                }
            }
            Ok(Outcome::Data(data)) => {
                let n = &mut self.tree.nodes[id as usize];
                n.set_data(data);
                if data == DataKey::NoFiemap {
                    self.fiemap_unsupported = true;
                }
            }
            Ok(Outcome::Entries { names, ents }) => {
                let root = self.tree.nodes[id as usize].root;
                let mut prefix = None;
                for (off, len, ino, kind) in ents {
                    let name = &names[off as usize..(off + len) as usize];
                    if let Some(f) = self.filter {
                        let p = prefix.get_or_insert_with(|| {
                            let mut p = self.tree.path(id);
                            if !p.ends_with(b"/") {
                                p.push(b'/');
                            }
                            p
                        });
                        let base = p.len();
                        p.extend_from_slice(name);
                        let keep = f(p, kind);
                        p.truncate(base);
                        if !keep {
                            continue;
                        }
                    }
                    let child = self.tree.add(id, u32::from(root), name, ino);
                    let key = self.stat_key(ino);
                    let mut job = Pending::new(child, JobOp::Stat);
                    job.hint = kind;
                    if let Some(p) = &mut self.prefetch {
                        p.touch(ino);
                        job.defer_fiemap = kind == FileKind::File && p.leaf_of(ino).is_some();
                    }
                    elevator.push(key, job);
                }
            }
        }
    }

    fn root_dev(&self, mut id: u32) -> Option<u64> {
        while self.tree.nodes[id as usize].parent != NONE {
            id = self.tree.nodes[id as usize].parent;
        }
        self.tree.nodes[id as usize].meta().map(|m| m.dev)
    }
}

struct Worker {
    roots: Arc<Roots>,
    cfg: ScanConfig,
    bytes_keys: bool,
    /// Open parent directories, by node (a small cache: siblings come together).
    dirs: HashMap<u32, OwnedFd>,
    reader: DirReader,
}

impl Worker {
    fn resolve(&self) -> ResolveFlags {
        if self.cfg.follow_links {
            ResolveFlags::empty()
        } else {
            ResolveFlags::NO_SYMLINKS | ResolveFlags::NO_MAGICLINKS
        }
    }

    fn parent_fd(&mut self, job: &Job) -> io::Result<&OwnedFd> {
        if !self.dirs.contains_key(&job.parent) {
            if self.dirs.len() >= 64 {
                self.dirs.clear();
            }
            let root = self.roots.fds[job.root as usize]
                .as_ref()
                .ok_or_else(|| io::Error::from_raw_os_error(libc_enotdir()))?;
            let parent_rel = &job.rel[..job.name_at.saturating_sub(1)];
            let fd = open_rel(root, parent_rel, OFlags::PATH | OFlags::DIRECTORY, self.resolve())?;
            self.dirs.insert(job.parent, fd);
        }
        Ok(&self.dirs[&job.parent])
    }

    fn run(&mut self, job: Job) -> Result<Outcome, (Op, io::Error)> {
        match job.op {
            JobOp::ReadDir => {
                let root = self.roots.fds[job.root as usize].as_ref().expect("directory root");
                let fd = open_rel(root, &job.rel, OFlags::RDONLY | OFlags::DIRECTORY, self.resolve())
                    .map_err(|e| (Op::OpenDir, e))?;
                let mut names = Vec::new();
                let mut ents = Vec::new();
                self.reader
                    .read(&fd, |e| {
                        ents.push((names.len() as u32, e.name.len() as u32, e.ino, e.kind));
                        names.extend_from_slice(e.name);
                    })
                    .map_err(|e| (Op::ReadDir, e))?;
                Ok(Outcome::Entries { names, ents })
            }
            JobOp::Stat => {
                let follow = self.cfg.follow_links;
                let want_keys = self.cfg.want_data_keys;
                let bytes_keys = self.bytes_keys;
                let name = job.rel[job.name_at..].to_vec();
                let parent = self.parent_fd(&job).map_err(|e| (Op::Stat, e))?;
                let nofollow = if follow { OFlags::empty() } else { OFlags::NOFOLLOW };
                if job.defer_fiemap {
                    let st = qtar_sys::statx_at(parent, &name, follow).map_err(|e| (Op::Stat, e))?;
                    let meta = Meta::from_statx(&st);
                    let deferred = meta.is_file() && meta.size > 0;
                    let data = if meta.is_file() && !deferred { DataKey::Free } else { DataKey::None };
                    return Ok(Outcome::Stat { meta, data, dir_key: None, deferred });
                }
                if want_keys && job.hint == FileKind::File {
                    // A regular file by its directory entry: one open serves
                    // both statx and FIEMAP.
                    let flags = OFlags::RDONLY | nofollow | OFlags::NONBLOCK;
                    if let Ok(fd) = qtar_sys::open_noatime(parent, &name, flags, ResolveFlags::empty()) {
                        let meta = Meta::from_statx(&qtar_sys::statx_fd(&fd).map_err(|e| (Op::Stat, e))?);
                        if meta.is_file() {
                            let data = if meta.size == 0 { DataKey::Free } else { data_key(&fd) };
                            return Ok(Outcome::Stat { meta, data, dir_key: None, deferred: false });
                        }
                    }
                }
                let st = qtar_sys::statx_at(parent, &name, follow).map_err(|e| (Op::Stat, e))?;
                let meta = Meta::from_statx(&st);
                let mut data = DataKey::None;
                let mut dir_key = None;
                if meta.is_file() && want_keys {
                    data = if meta.size == 0 {
                        DataKey::Free
                    } else {
                        // An unreadable file is still planned; the data pass
                        // reports it when it cannot open it.
                        match qtar_sys::open_noatime(
                            parent,
                            &name,
                            OFlags::RDONLY | nofollow | OFlags::NONBLOCK,
                            ResolveFlags::empty(),
                        ) {
                            Ok(fd) => data_key(&fd),
                            Err(_) => DataKey::Unknown,
                        }
                    };
                } else if meta.is_dir() && bytes_keys {
                    if let Ok(fd) = qtar_sys::open_noatime(
                        parent,
                        &name,
                        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW,
                        ResolveFlags::empty(),
                    ) {
                        if let DataKey::At { first, .. } = data_key(&fd) {
                            dir_key = Some(first);
                        }
                    }
                }
                Ok(Outcome::Stat { meta, data, dir_key, deferred: false })
            }
            JobOp::Fiemap => {
                let name = job.rel[job.name_at..].to_vec();
                let nofollow = if self.cfg.follow_links { OFlags::empty() } else { OFlags::NOFOLLOW };
                let flags = OFlags::RDONLY | nofollow | OFlags::NONBLOCK;
                // As in the stat: a file that cannot be opened is still
                // planned, and the data pass reports it.
                let fd = self
                    .parent_fd(&job)
                    .and_then(|parent| qtar_sys::open_noatime(parent, &name, flags, ResolveFlags::empty()));
                Ok(Outcome::Data(fd.map_or(DataKey::Unknown, |fd| data_key(&fd))))
            }
        }
    }
}

fn libc_enotdir() -> i32 {
    rustix::io::Errno::NOTDIR.raw_os_error()
}

/// Where a file's data lies: the lowest and highest device offsets of the
/// extents that need a read.
pub(crate) fn data_key(fd: &impl AsFd) -> DataKey {
    use qtar_sys::ExtentFlags as F;
    let complete = |ext: &[qtar_sys::Extent]| ext.is_empty() || ext.last().is_some_and(|e| e.flags.contains(F::LAST));
    let ext = match qtar_sys::fiemap_range(fd, 0, u64::MAX, 8) {
        Err(_) => return DataKey::NoFiemap,
        Ok(ext) if complete(&ext) => ext,
        // More than eight extents: look at them all.
        Ok(_) => match qtar_sys::fiemap(fd) {
            Ok(all) => all,
            Err(_) => return DataKey::NoFiemap,
        },
    };
    let reads = ext.iter().filter(|e| e.needs_device_read());
    let span = reads.fold(None, |acc: Option<(u64, u64)>, e| {
        Some(acc.map_or((e.physical, e.physical), |(lo, hi)| (lo.min(e.physical), hi.max(e.physical))))
    });
    match span {
        Some((first, last)) => DataKey::At { first, last },
        None if ext.iter().any(|e| e.flags.contains(F::UNKNOWN) && !e.flags.contains(F::DELALLOC)) => DataKey::Unknown,
        // Holes, inline data, delayed allocation (still in the page cache)
        // and unwritten extents: reading costs no seek.
        None => DataKey::Free,
    }
}

/// Opens `rel` below `root` (the root itself when `rel` is empty), a chunk of
/// components at a time when the path is longer than `PATH_MAX` allows.
pub(crate) fn open_rel(root: &OwnedFd, rel: &[u8], flags: OFlags, resolve: ResolveFlags) -> io::Result<OwnedFd> {
    let rel: &[u8] = if rel.is_empty() { b"." } else { rel };
    if rel.len() <= CHUNK {
        return qtar_sys::open_noatime(root, rel, flags, resolve);
    }
    let mut cur: Option<OwnedFd> = None;
    let mut rest = rel;
    while rest.len() > CHUNK {
        let cut = rest[..CHUNK]
            .iter()
            .rposition(|&b| b == b'/')
            .ok_or_else(|| io::Error::from_raw_os_error(rustix::io::Errno::NAMETOOLONG.raw_os_error()))?;
        let base = cur.as_ref().unwrap_or(root);
        let next = qtar_sys::open_noatime(base, &rest[..cut], OFlags::PATH | OFlags::DIRECTORY, resolve)?;
        cur = Some(next);
        rest = &rest[cut + 1..];
    }
    qtar_sys::open_noatime(cur.as_ref().unwrap_or(root), rest, flags, resolve)
}
