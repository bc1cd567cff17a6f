//! The data pass: files opened in plan order, with a prefetch window of
//! `FADV_WILLNEED` hints across the next files so the device queue never runs
//! dry and the kernel's elevator has requests to merge and sort.

use std::collections::VecDeque;
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
    ahead: VecDeque<(usize, Option<io::Result<File>>)>,
    open_next: usize,
    ahead_bytes: u64,
    window: Prefetch,
}

impl Plan {
    /// Reads the plan in order. Each regular file is opened (with `O_NOATIME`
    /// where permitted) and hinted into the page cache a window ahead of use.
    pub fn reader(&self) -> Reader<'_> {
        self.reader_with(self.prefetch)
    }

    /// [`Plan::reader`] with an explicit prefetch window.
    pub fn reader_with(&self, window: Prefetch) -> Reader<'_> {
        Reader { plan: self, next: 0, ahead: VecDeque::new(), open_next: 0, ahead_bytes: 0, window }
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
}

impl<'p> Reader<'p> {
    fn wants_data(&self, pos: usize) -> bool {
        let e = self.plan.get(pos).expect("in range");
        e.meta().is_file() && e.hard_link_target().is_none()
    }

    fn fill(&mut self) {
        let len = self.plan.len();
        while self.open_next < len {
            let pos = self.open_next;
            let too_far = self.ahead.len() >= self.window.files.max(1)
                || (self.ahead_bytes >= self.window.bytes && !self.ahead.is_empty());
            if too_far && pos > self.next {
                break;
            }
            self.open_next += 1;
            if !self.wants_data(pos) {
                self.ahead.push_back((pos, None));
                continue;
            }
            let file = self.plan.open_data(pos);
            if let Ok(f) = &file {
                let size = self.plan.get(pos).expect("in range").meta().size;
                let hint = size.min(self.window.bytes.max(1));
                if self.window.files > 0 && self.plan.get(pos).expect("in range").needs_read() {
                    // Advice only: a failure costs speed, never correctness.
                    let _ = qtar_sys::fadvise(f, 0, hint, Advice::WillNeed);
                    self.ahead_bytes += hint;
                }
            }
            self.ahead.push_back((pos, Some(file)));
        }
    }
}

impl<'p> Iterator for Reader<'p> {
    type Item = Result<Item<'p>, Error>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.next >= self.plan.len() {
            return None;
        }
        self.fill();
        let (pos, file) = self.ahead.pop_front().expect("window holds the next entry");
        debug_assert_eq!(pos, self.next);
        self.next += 1;
        let entry = self.plan.get(pos).expect("in range");
        if entry.needs_read() && self.window.files > 0 {
            let size = entry.meta().size;
            self.ahead_bytes = self.ahead_bytes.saturating_sub(size.min(self.window.bytes.max(1)));
        }
        Some(match file {
            None => Ok(Item { entry, file: None }),
            Some(Ok(f)) => Ok(Item { entry, file: Some(f) }),
            Some(Err(e)) => Err(Error::new(entry.path(), Op::Open, e)),
        })
    }
}
