//! The data pass: files opened in plan order, with a prefetch window of
//! `FADV_WILLNEED` hints across the next files so the device queue never runs
//! dry and the kernel's elevator has requests to merge and sort.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap, VecDeque};
use std::fs::File;
use std::io;
use std::os::unix::ffi::OsStrExt;

use qtar_sys::{Advice, OFlags, ResolveFlags};

use crate::error::{Error, Op};
use crate::plan::{Entry, Plan};
use crate::tree::NONE;

/// How far ahead of the reader the data pass asks the kernel to read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Prefetch {
    /// At most this many files open and hinted ahead.
    pub files: usize,
    /// At most this many bytes hinted ahead.
    pub bytes: u64,
}

impl Prefetch {
    /// The default for a rotational (or unknown) device: enough requests in
    /// flight for the elevator to sort, few enough to stay near the head.
    pub const ROTATIONAL: Prefetch = Prefetch { files: 64, bytes: 16 << 20 };
    /// The default for a non-rotational device: a deeper queue.
    pub const SOLID_STATE: Prefetch = Prefetch { files: 256, bytes: 64 << 20 };
    /// No prefetching: one request at a time, like a plain reader.
    pub const NONE: Prefetch = Prefetch { files: 0, bytes: 0 };
}

/// One planned entry, with its data open when it is a regular file that is not
/// a second name of an earlier hard link.
#[derive(Debug)]
pub struct Item<'p> {
    /// The entry.
    pub entry: Entry<'p>,
    /// The open file, positioned at its start.
    pub file: Option<File>,
}

/// Iterates a [`Plan`] in order, opening files ahead. Get one from [`Plan::reader`].
pub struct Reader<'p> {
    plan: &'p Plan,
    next: usize,
    window: Prefetch,
    mode: Mode,
}

enum Mode {
    /// Hints whole files a window ahead, in plan order.
    Window { ahead: VecDeque<(usize, Option<io::Result<File>>)>, open_next: usize, ahead_bytes: u64 },
    /// Hints extents in physical order: a sweep over the device.
    Sweep(Sweep),
}

/// The physical sweep of the data pass. Files are admitted (opened, their
/// extents queued) in the order of their first extent, extents are hinted in
/// device order, and files are handed out in the order of their last extent,
/// so every extent is read once, when the sweep passes it, even for files
/// scattered over the disk. The sweep runs `window.bytes` of device offsets
/// ahead of the file being handed out.
struct Sweep {
    admit_next: usize,
    /// Files kept open ahead of the one being handed out, at most.
    max_open: usize,
    open: HashMap<usize, io::Result<File>>,
    /// (device offset, plan position, file offset, length), lowest offset first.
    pending: BinaryHeap<Reverse<(u64, usize, u64, u64)>>,
}

/// Descriptors the sweep may hold: half of what the process may still open,
/// between 64 and 65536.
fn max_open() -> usize {
    let soft = rustix::process::getrlimit(rustix::process::Resource::Nofile).current.unwrap_or(1024);
    (soft.saturating_sub(64) / 2).clamp(64, 65536) as usize
}

impl Plan {
    /// Reads the plan in order. Each regular file is opened (with `O_NOATIME`
    /// where permitted) and hinted into the page cache ahead of use: extent by
    /// extent in device order when the plan is in physical order, file by file
    /// otherwise.
    pub fn reader(&self) -> Reader<'_> {
        self.reader_with(self.prefetch)
    }

    /// [`Plan::reader`] with an explicit prefetch window.
    pub fn reader_with(&self, window: Prefetch) -> Reader<'_> {
        let mode = if !self.admit.is_empty() && window.files > 0 {
            Mode::Sweep(Sweep { admit_next: 0, max_open: max_open(), open: HashMap::new(), pending: BinaryHeap::new() })
        } else {
            Mode::Window { ahead: VecDeque::new(), open_next: 0, ahead_bytes: 0 }
        };
        Reader { plan: self, next: 0, window, mode }
    }

    pub(crate) fn open_data(&self, pos: usize) -> io::Result<File> {
        let id = self.order[pos];
        let n = &self.tree.nodes[id as usize];
        let resolve = if self.follow_links {
            ResolveFlags::empty()
        } else {
            ResolveFlags::NO_SYMLINKS | ResolveFlags::NO_MAGICLINKS
        };
        let flags = OFlags::RDONLY | if self.follow_links { OFlags::empty() } else { OFlags::NOFOLLOW };
        let fd = match &self.roots.fds[n.root as usize] {
            Some(root) if n.parent != NONE => crate::scan::open_rel(root, &self.tree.rel(id), flags, resolve)?,
            _ => qtar_sys::open_noatime(
                rustix::fs::CWD,
                self.root_paths[n.root as usize].as_os_str().as_bytes(),
                flags,
                ResolveFlags::empty(),
            )?,
        };
        Ok(File::from(fd))
    }

    fn wants_data(&self, pos: usize) -> bool {
        let e = self.get(pos).expect("in range");
        e.meta().is_file() && e.hard_link_target().is_none()
    }
}

impl<'p> Reader<'p> {
    fn next_window(&mut self) -> (usize, Option<io::Result<File>>) {
        let plan = self.plan;
        let window = self.window;
        let Mode::Window { ahead, open_next, ahead_bytes } = &mut self.mode else { unreachable!() };
        let len = plan.len();
        while *open_next < len {
            let pos = *open_next;
            let too_far = ahead.len() >= window.files.max(1) || (*ahead_bytes >= window.bytes && !ahead.is_empty());
            if too_far && pos > self.next {
                break;
            }
            *open_next += 1;
            if !plan.wants_data(pos) {
                ahead.push_back((pos, None));
                continue;
            }
            let file = plan.open_data(pos);
            if let Ok(f) = &file {
                let e = plan.get(pos).expect("in range");
                let hint = e.meta().size.min(window.bytes.max(1));
                if window.files > 0 && e.needs_read() {
                    // Advice only: a failure costs speed, never correctness.
                    let _ = qtar_sys::fadvise(f, 0, hint, Advice::WillNeed);
                    *ahead_bytes += hint;
                }
            }
            ahead.push_back((pos, Some(file)));
        }
        let (pos, file) = ahead.pop_front().expect("window holds the next entry");
        let e = plan.get(pos).expect("in range");
        if e.needs_read() && window.files > 0 {
            *ahead_bytes = ahead_bytes.saturating_sub(e.meta().size.min(window.bytes.max(1)));
        }
        (pos, file)
    }

    fn next_sweep(&mut self) -> (usize, Option<io::Result<File>>) {
        let plan = self.plan;
        let pos = self.next;
        let Mode::Sweep(sw) = &mut self.mode else { unreachable!() };
        if !plan.wants_data(pos) {
            return (pos, None);
        }
        let span = plan.get(pos).expect("in range").physical_span();
        let Some((_, last)) = span else {
            // No extents to sweep (empty, inline, unknown): open on demand.
            return (pos, Some(plan.open_data(pos)));
        };
        let mut target = last.saturating_add(self.window.bytes);
        // Admit every file whose first extent the sweep will reach.
        while sw.admit_next < plan.admit.len() {
            let p = plan.admit[sw.admit_next] as usize;
            let first = plan.get(p).and_then(|e| e.physical_span()).map_or(0, |s| s.0);
            if first > target {
                break;
            }
            if sw.open.len() >= sw.max_open {
                // Out of descriptors: the sweep stops short of the first file
                // it cannot admit, so it never runs ahead of a file that would
                // then be read out of order.
                target = first.saturating_sub(1);
                break;
            }
            sw.admit_next += 1;
            if p < pos {
                continue;
            }
            let file = plan.open_data(p);
            if let Ok(f) = &file {
                let (first, last) = plan.get(p).and_then(|e| e.physical_span()).unwrap_or((0, 0));
                let extents = if first == last {
                    // One extent needs reading (the usual small file): the plan
                    // already knows where, no second FIEMAP.
                    let size = plan.get(p).expect("in range").meta().size;
                    vec![qtar_sys::Extent { logical: 0, physical: first, length: size, flags: Default::default() }]
                } else {
                    qtar_sys::fiemap(f).unwrap_or_default()
                };
                for e in extents.into_iter().filter(|e| e.needs_device_read()) {
                    // Long extents are hinted a window at a time.
                    let step = self.window.bytes.max(1 << 20);
                    let mut off = 0;
                    while off < e.length {
                        let len = (e.length - off).min(step);
                        sw.pending.push(Reverse((e.physical + off, p, e.logical + off, len)));
                        off += len;
                    }
                }
            }
            sw.open.insert(p, file);
        }
        // Hint, in device order, every queued extent up to the target.
        while let Some(Reverse((phys, p, logical, len))) = sw.pending.peek().copied() {
            if phys > target {
                break;
            }
            sw.pending.pop();
            if let Some(Ok(f)) = sw.open.get(&p) {
                // Advice only: a failure costs speed, never correctness.
                let _ = qtar_sys::readahead(f, logical, len as usize);
            }
        }
        let file = sw.open.remove(&pos).unwrap_or_else(|| plan.open_data(pos));
        (pos, Some(file))
    }
}

impl<'p> Iterator for Reader<'p> {
    type Item = Result<Item<'p>, Error>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.next >= self.plan.len() {
            return None;
        }
        let (pos, file) = match self.mode {
            Mode::Window { .. } => self.next_window(),
            Mode::Sweep(_) => self.next_sweep(),
        };
        debug_assert_eq!(pos, self.next);
        self.next += 1;
        let entry = self.plan.get(pos).expect("in range");
        Some(match file {
            None => Ok(Item { entry, file: None }),
            Some(Ok(f)) => Ok(Item { entry, file: Some(f) }),
            Some(Err(e)) => Err(Error::new(entry.path(), Op::Open, e)),
        })
    }
}
