//! Safe extraction (`tar -x`).
//!
//! Every path is resolved with `openat2(RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS)`
//! relative to a directory fd of the destination, so no member, symlink or
//! hard link can make anything land outside it. Final components are never
//! followed: files are written to a temporary name in their directory and
//! renamed over the final name; symlinks, devices and links are created after
//! removing whatever had the name. Directory attributes are applied at the
//! end (GNU's delayed set-stat), so members may come in any order.

use std::collections::{HashMap, HashSet};
use std::fs::File;
use std::io::{self, Read};
use std::os::fd::OwnedFd;
use std::os::unix::fs::FileExt;
use std::path::Path;

use rustix::fs::{AtFlags, FileType, Mode, OFlags, ResolveFlags, Timespec, Timestamps, XattrFlags};

use crate::error::ArchiveError;
use crate::meta::Timestamp;
use crate::name::{contains_dot_dot, unsafe_prefix_len};
use crate::read::{Entry, Reader};

/// Options of [`extract`], mirroring GNU tar's flags.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ExtractOptions {
    /// `--same-owner` (`Some(true)`) / `--no-same-owner` (`Some(false)`);
    /// `None` is GNU's default: restore owners when running as root.
    pub same_owner: Option<bool>,
    /// `-p`/`--same-permissions` (`Some(true)`) / `--no-same-permissions`;
    /// `None` is GNU's default: exact modes for root, umask applied otherwise.
    pub same_permissions: Option<bool>,
    /// `--numeric-owner`: use the stored uid/gid, not the user/group names.
    pub numeric_owner: bool,
    /// `--xattrs`: restore `SCHILY.xattr.*` records.
    pub xattrs: bool,
}

/// Outcome of an extraction: GNU-style messages and the exit status.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ExtractReport {
    /// Messages to print after `tar: `, in order (warnings and errors).
    pub messages: Vec<String>,
    /// 0 on success, 1 if some files differ (not used by extraction), 2 on
    /// errors (GNU: "Exiting with failure status due to previous errors").
    pub exit_status: i32,
    /// Number of members extracted.
    pub extracted: u64,
}

/// One directory whose attributes are applied at the end.
struct Delayed {
    path: Vec<u8>,
    /// (dev, ino) of the directory we made or found, to skip it if a later
    /// member replaced it.
    id: Option<(u64, u64)>,
    mode: u32,
    owner: Option<(u32, u32)>,
    mtime: Timestamp,
    xattrs: Vec<(Vec<u8>, Vec<u8>)>,
}

struct Ctx {
    root: OwnedFd,
    opts: ExtractOptions,
    same_owner: bool,
    umask: u32,
    report: ExtractReport,
    warned: HashSet<String>,
    delayed: Vec<Delayed>,
    counter: u64,
    users: HashMap<Vec<u8>, Option<u32>>,
    groups: HashMap<Vec<u8>, Option<u32>>,
}

/// `strerror` text without Rust's " (os error N)" suffix, like GNU prints.
fn errtext(e: &io::Error) -> String {
    let s = e.to_string();
    match s.find(" (os error") {
        Some(i) => s[..i].to_string(),
        None => s,
    }
}

fn lossy(b: &[u8]) -> String {
    crate::read::quote(b)
}

fn process_umask() -> u32 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines().find_map(|l| l.strip_prefix("Umask:")).and_then(|v| u32::from_str_radix(v.trim(), 8).ok())
        })
        .unwrap_or(0o022)
}

const BENEATH: ResolveFlags = ResolveFlags::BENEATH.union(ResolveFlags::NO_MAGICLINKS);

/// Extracts the archive read from `input` into `dest` (which must exist).
///
/// Member names are made relative like GNU tar (leading `/` removed with a
/// warning); members with a `..` component are skipped with
/// "Member name contains '..'". Nothing is ever created, changed or
/// followed outside `dest`: a member reached through a symlink that leaves
/// `dest` fails with the kernel's error ("Invalid cross-device link").
/// Per-member failures are reported in [`ExtractReport`] (exit status 2) and
/// extraction continues; a corrupt archive stream is an `Err`.
pub fn extract<R: Read>(input: R, dest: &Path, opts: ExtractOptions) -> Result<ExtractReport, ArchiveError> {
    let root = rustix::fs::open(dest, OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC, Mode::empty())
        .map_err(|e| ArchiveError::Destination { path: dest.display().to_string(), source: e.into() })?;
    let is_root = rustix::process::geteuid().is_root();
    let mut ctx = Ctx {
        root,
        same_owner: opts.same_owner.unwrap_or(is_root),
        umask: if opts.same_permissions.unwrap_or(is_root) { 0 } else { process_umask() },
        opts,
        report: ExtractReport::default(),
        warned: HashSet::new(),
        delayed: Vec::new(),
        counter: 0,
        users: HashMap::new(),
        groups: HashMap::new(),
    };
    let mut rd = Reader::new(input);
    let result = (|| {
        while let Some(e) = rd.next_entry()? {
            ctx.member(&mut rd, e)?;
        }
        Ok::<(), ArchiveError>(())
    })();
    ctx.apply_delayed();
    ctx.report.messages.extend(rd.warnings.iter().cloned());
    result?;
    Ok(ctx.report)
}

impl Ctx {
    fn error(&mut self, msg: String) {
        self.report.messages.push(msg);
        self.report.exit_status = 2;
    }

    fn warn_once(&mut self, msg: String) {
        if self.warned.insert(msg.clone()) {
            self.report.messages.push(msg);
        }
    }

    /// GNU's safer_name_suffix for extraction; `None` if the member must be skipped.
    fn safe_name(&mut self, name: &[u8], what: &str) -> Option<Vec<u8>> {
        let p = unsafe_prefix_len(name);
        if p > 0 {
            self.warn_once(format!("Removing leading `{}' from {what}", String::from_utf8_lossy(&name[..p])));
        }
        if contains_dot_dot(name) {
            return None;
        }
        Some(name[p..].to_vec())
    }

    fn lookup_owner(&mut self, e: &Entry) -> (u32, u32) {
        let mut uid = e.uid as u32;
        let mut gid = e.gid as u32;
        if !self.opts.numeric_owner {
            if !e.uname.is_empty() {
                let u = self.users.entry(e.uname.clone()).or_insert_with(|| {
                    std::str::from_utf8(&e.uname)
                        .ok()
                        .and_then(|n| nix::unistd::User::from_name(n).ok().flatten())
                        .map(|u| u.uid.as_raw())
                });
                if let Some(u) = *u {
                    uid = u;
                }
            }
            if !e.gname.is_empty() {
                let g = self.groups.entry(e.gname.clone()).or_insert_with(|| {
                    std::str::from_utf8(&e.gname)
                        .ok()
                        .and_then(|n| nix::unistd::Group::from_name(n).ok().flatten())
                        .map(|g| g.gid.as_raw())
                });
                if let Some(g) = *g {
                    gid = g;
                }
            }
        }
        (uid, gid)
    }

    /// Opens (creating missing directories) the parent of a member, beneath the root.
    fn open_parent(&self, comps: &[&[u8]], create: bool) -> io::Result<OwnedFd> {
        let flags = OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC;
        if comps.is_empty() {
            return Ok(rustix::fs::openat2(&self.root, ".", flags, Mode::empty(), BENEATH)?);
        }
        let joined = comps.join(&b"/"[..]);
        match rustix::fs::openat2(&self.root, joined.as_slice(), flags, Mode::empty(), BENEATH) {
            Ok(fd) => return Ok(fd),
            // Missing directories, or a path longer than PATH_MAX: walk it.
            Err(rustix::io::Errno::NOENT) if create => {}
            Err(rustix::io::Errno::NAMETOOLONG) => {}
            Err(e) => return Err(e.into()),
        }
        let mut cur = rustix::fs::openat2(&self.root, ".", flags, Mode::empty(), BENEATH)?;
        for c in comps {
            let next = match rustix::fs::openat2(&cur, *c, flags, Mode::empty(), BENEATH) {
                Ok(fd) => fd,
                Err(rustix::io::Errno::NOENT) if create => {
                    match rustix::fs::mkdirat(&cur, *c, Mode::from_raw_mode(0o777 & !self.umask_for_dirs())) {
                        Ok(()) | Err(rustix::io::Errno::EXIST) => {}
                        Err(e) => return Err(e.into()),
                    }
                    rustix::fs::openat2(&cur, *c, flags, Mode::empty(), BENEATH)?
                }
                Err(e) => return Err(e.into()),
            };
            cur = next;
        }
        Ok(cur)
    }

    fn umask_for_dirs(&self) -> u32 {
        if self.umask == 0 { process_umask() } else { self.umask }
    }

    /// Removes whatever has the final name (not a non-empty directory).
    fn clear(parent: &OwnedFd, base: &[u8]) -> io::Result<()> {
        match rustix::fs::unlinkat(parent, base, AtFlags::empty()) {
            Ok(()) | Err(rustix::io::Errno::NOENT) => Ok(()),
            Err(rustix::io::Errno::ISDIR) => match rustix::fs::unlinkat(parent, base, AtFlags::REMOVEDIR) {
                Ok(()) | Err(rustix::io::Errno::NOENT) => Ok(()),
                Err(e) => Err(e.into()),
            },
            Err(e) => Err(e.into()),
        }
    }

    fn times(&self, mtime: Timestamp) -> Timestamps {
        Timestamps {
            last_access: Timespec { tv_sec: 0, tv_nsec: rustix::fs::UTIME_NOW },
            last_modification: Timespec { tv_sec: mtime.sec, tv_nsec: i64::from(mtime.nsec) as _ },
        }
    }

    fn member<R: Read>(&mut self, rd: &mut Reader<R>, e: Entry) -> Result<(), ArchiveError> {
        let shown = lossy(&e.name);
        let Some(name) = self.safe_name(&e.name, "member names") else {
            self.error(format!("{shown}: Member name contains '..'"));
            return Ok(());
        };
        let comps: Vec<&[u8]> = name.split(|&c| c == b'/').filter(|c| !c.is_empty() && *c != b".").collect();
        let is_dir = e.typeflag == b'5' || (matches!(e.typeflag, b'0' | 0 | b'7') && e.name.ends_with(b"/"));
        let owner = self.same_owner.then(|| self.lookup_owner(&e));
        let mode = e.mode & !self.umask & 0o7777;
        let Some((base, parents)) = comps.split_last() else {
            // The destination itself ("./").
            if is_dir {
                self.delayed.push(Delayed {
                    path: Vec::new(),
                    id: None,
                    mode,
                    owner,
                    mtime: e.mtime,
                    xattrs: e.xattrs.clone(),
                });
            }
            return Ok(());
        };
        let parent = match self.open_parent(parents, true) {
            Ok(p) => p,
            Err(err) => {
                self.error(format!("{shown}: Cannot open: {}", errtext(&err)));
                return Ok(());
            }
        };
        let base: &[u8] = base;
        let res = match e.typeflag {
            _ if is_dir => self.make_dir(&parent, base, &comps, &e, mode, owner),
            b'0' | 0 | b'7' | b'S' => {
                self.make_file(rd, &parent, base, &e, mode, owner).map_err(|x| ("Cannot open", x))
            }
            b'2' => {
                let r = Self::clear(&parent, base)
                    .and_then(|()| Ok(rustix::fs::symlinkat(e.link.as_slice(), &parent, base)?));
                match r {
                    Err(x) => Err(("Cannot create symlink to", x)),
                    Ok(()) => {
                        self.finish_node(&parent, base, &e, None, owner);
                        Ok(())
                    }
                }
            }
            b'1' => return self.make_hardlink(&parent, base, &e, &shown),
            b'3' | b'4' | b'6' => {
                let ft = match e.typeflag {
                    b'3' => FileType::CharacterDevice,
                    b'4' => FileType::BlockDevice,
                    _ => FileType::Fifo,
                };
                let dev = rustix::fs::makedev(e.devmajor, e.devminor);
                let r = Self::clear(&parent, base)
                    .and_then(|()| Ok(rustix::fs::mknodat(&parent, base, ft, Mode::from_raw_mode(0o600), dev)?));
                match r {
                    Err(x) => Err(("Cannot mknod", x)),
                    Ok(()) => {
                        self.finish_node(&parent, base, &e, Some(mode), owner);
                        Ok(())
                    }
                }
            }
            t => {
                self.report
                    .messages
                    .push(format!("{shown}: Unknown file type '{}', extracted as normal file", t as char));
                self.make_file(rd, &parent, base, &e, mode, owner).map_err(|x| ("Cannot open", x))
            }
        };
        match res {
            Ok(()) => self.report.extracted += 1,
            Err((what, err)) => {
                let msg = if what == "Cannot create symlink to" {
                    format!("{shown}: {what} '{}': {}", lossy(&e.link), errtext(&err))
                } else {
                    format!("{shown}: {what}: {}", errtext(&err))
                };
                self.error(msg);
            }
        }
        Ok(())
    }

    fn make_dir(
        &mut self,
        parent: &OwnedFd,
        base: &[u8],
        comps: &[&[u8]],
        e: &Entry,
        mode: u32,
        owner: Option<(u32, u32)>,
    ) -> Result<(), (&'static str, io::Error)> {
        match rustix::fs::mkdirat(parent, base, Mode::from_raw_mode(0o700)) {
            Ok(()) => {}
            Err(rustix::io::Errno::EXIST) => {
                let st = rustix::fs::statat(parent, base, AtFlags::SYMLINK_NOFOLLOW)
                    .map_err(|x| ("Cannot mkdir", x.into()))?;
                if FileType::from_raw_mode(st.st_mode) != FileType::Directory {
                    Self::clear(parent, base).map_err(|x| ("Cannot mkdir", x))?;
                    rustix::fs::mkdirat(parent, base, Mode::from_raw_mode(0o700))
                        .map_err(|x| ("Cannot mkdir", x.into()))?;
                }
            }
            Err(x) => return Err(("Cannot mkdir", x.into())),
        }
        let id = rustix::fs::statat(parent, base, AtFlags::SYMLINK_NOFOLLOW).ok().map(|st| (st.st_dev, st.st_ino));
        self.delayed.push(Delayed {
            path: comps.join(&b"/"[..]),
            id,
            mode,
            owner,
            mtime: e.mtime,
            xattrs: e.xattrs.clone(),
        });
        Ok(())
    }

    fn make_file<R: Read>(
        &mut self,
        rd: &mut Reader<R>,
        parent: &OwnedFd,
        base: &[u8],
        e: &Entry,
        mode: u32,
        owner: Option<(u32, u32)>,
    ) -> io::Result<()> {
        self.counter += 1;
        let tmp = format!(".qtar-tmp.{}.{}", std::process::id(), self.counter);
        let fd = rustix::fs::openat(
            parent,
            tmp.as_str(),
            OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::from_raw_mode(0o600),
        )?;
        let file = File::from(fd);
        let r = (|| -> io::Result<()> {
            let mut io_err: Option<io::Error> = None;
            match &e.sparse {
                None => {
                    let mut pos = 0u64;
                    rd.read_data(&mut |chunk| {
                        if io_err.is_none() {
                            if let Err(x) = file.write_all_at(chunk, pos) {
                                io_err = Some(x);
                            }
                        }
                        pos += chunk.len() as u64;
                        Ok(())
                    })
                    .map_err(io::Error::other)?;
                }
                Some(regions) => {
                    let mut idx = 0usize;
                    let mut within = 0u64;
                    rd.read_data(&mut |mut chunk| {
                        while !chunk.is_empty() && idx < regions.len() {
                            let r = regions[idx];
                            let n = (r.len - within).min(chunk.len() as u64) as usize;
                            if io_err.is_none() && n > 0 {
                                if let Err(x) = file.write_all_at(&chunk[..n], r.offset + within) {
                                    io_err = Some(x);
                                }
                            }
                            chunk = &chunk[n..];
                            within += n as u64;
                            if within == r.len {
                                idx += 1;
                                within = 0;
                            }
                        }
                        Ok(())
                    })
                    .map_err(io::Error::other)?;
                }
            }
            if let Some(x) = io_err {
                return Err(x);
            }
            file.set_len(e.size)?;
            if let Some((u, g)) = owner {
                rustix::fs::fchown(&file, Some(rustix::fs::Uid::from_raw(u)), Some(rustix::fs::Gid::from_raw(g)))?;
            }
            rustix::fs::fchmod(&file, Mode::from_raw_mode(mode))?;
            if self.opts.xattrs {
                for (k, v) in &e.xattrs {
                    rustix::fs::fsetxattr(&file, k.as_slice(), v, XattrFlags::empty())?;
                }
            }
            rustix::fs::futimens(&file, &self.times(e.mtime))?;
            match rustix::fs::renameat(parent, tmp.as_str(), parent, base) {
                // An (empty) directory has the name: remove it like GNU does.
                Err(rustix::io::Errno::ISDIR) => {
                    rustix::fs::unlinkat(parent, base, AtFlags::REMOVEDIR)?;
                    rustix::fs::renameat(parent, tmp.as_str(), parent, base)?;
                }
                r => r?,
            }
            Ok(())
        })();
        if r.is_err() {
            let _ = rustix::fs::unlinkat(parent, tmp.as_str(), AtFlags::empty());
            // Make sure the rest of the member's data is skipped.
            let _ = rd.skip_data();
        }
        r
    }

    /// Owner, mode and times of a just-created non-regular node (never followed).
    fn finish_node(&mut self, parent: &OwnedFd, base: &[u8], e: &Entry, mode: Option<u32>, owner: Option<(u32, u32)>) {
        let shown = lossy(&e.name);
        if let Some((u, g)) = owner {
            if let Err(x) = rustix::fs::chownat(
                parent,
                base,
                Some(rustix::fs::Uid::from_raw(u)),
                Some(rustix::fs::Gid::from_raw(g)),
                AtFlags::SYMLINK_NOFOLLOW,
            ) {
                self.error(format!("{shown}: Cannot change ownership to uid {u}, gid {g}: {}", errtext(&x.into())));
            }
        }
        if let Some(m) = mode {
            if let Err(x) = rustix::fs::chmodat(parent, base, Mode::from_raw_mode(m), AtFlags::empty()) {
                self.error(format!("{shown}: Cannot change mode to {m:04o}: {}", errtext(&x.into())));
            }
        }
        if let Err(x) = rustix::fs::utimensat(parent, base, &self.times(e.mtime), AtFlags::SYMLINK_NOFOLLOW) {
            self.error(format!("{shown}: Cannot utime: {}", errtext(&x.into())));
        }
    }

    fn make_hardlink(&mut self, parent: &OwnedFd, base: &[u8], e: &Entry, shown: &str) -> Result<(), ArchiveError> {
        let target_shown = lossy(&e.link);
        let Some(target) = self.safe_name(&e.link, "hard link targets") else {
            self.error(format!("{shown}: Cannot hard link to '{target_shown}': Member name contains '..'"));
            return Ok(());
        };
        let tcomps: Vec<&[u8]> = target.split(|&c| c == b'/').filter(|c| !c.is_empty() && *c != b".").collect();
        let r = (|| -> io::Result<()> {
            let Some((tbase, tparents)) = tcomps.split_last() else {
                return Err(io::Error::from_raw_os_error(rustix::io::Errno::PERM.raw_os_error()));
            };
            let tparent = self.open_parent(tparents, false)?;
            // Refuse before removing anything if the target does not exist.
            rustix::fs::statat(&tparent, *tbase, AtFlags::SYMLINK_NOFOLLOW)?;
            if tparents == &tcomps[..tcomps.len() - 1] && *tbase == base {
                let same = rustix::fs::statat(parent, base, AtFlags::SYMLINK_NOFOLLOW).ok();
                let t = rustix::fs::statat(&tparent, *tbase, AtFlags::SYMLINK_NOFOLLOW).ok();
                if let (Some(a), Some(b)) = (same, t) {
                    if a.st_ino == b.st_ino && a.st_dev == b.st_dev {
                        return Ok(());
                    }
                }
            }
            Self::clear(parent, base)?;
            rustix::fs::linkat(&tparent, *tbase, parent, base, AtFlags::empty())?;
            Ok(())
        })();
        match r {
            Ok(()) => self.report.extracted += 1,
            Err(x) => self.error(format!("{shown}: Cannot hard link to '{target_shown}': {}", errtext(&x))),
        }
        Ok(())
    }

    /// Applies directory attributes, deepest first (GNU's delayed set-stat).
    fn apply_delayed(&mut self) {
        let mut delayed = std::mem::take(&mut self.delayed);
        delayed.sort_by_key(|d| std::cmp::Reverse(d.path.len()));
        for d in delayed {
            let shown = if d.path.is_empty() { ".".to_string() } else { lossy(&d.path) };
            let comps: Vec<&[u8]> = d.path.split(|&c| c == b'/').filter(|c| !c.is_empty()).collect();
            let (parent, base): (OwnedFd, &[u8]) = match comps.split_last() {
                None => {
                    match rustix::fs::openat2(&self.root, ".", OFlags::PATH | OFlags::CLOEXEC, Mode::empty(), BENEATH) {
                        Ok(fd) => (fd, b"."),
                        Err(x) => {
                            self.error(format!("{shown}: Cannot open: {}", errtext(&x.into())));
                            continue;
                        }
                    }
                }
                Some((base, parents)) => match self.open_parent(parents, false) {
                    Ok(fd) => (fd, base),
                    Err(_) => continue,
                },
            };
            let fd = match rustix::fs::openat2(
                &parent,
                base,
                OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
                Mode::empty(),
                BENEATH | ResolveFlags::NO_SYMLINKS,
            ) {
                Ok(fd) => fd,
                // A later member replaced or removed the directory: like GNU,
                // leave whatever is there now alone.
                Err(rustix::io::Errno::NOTDIR | rustix::io::Errno::LOOP | rustix::io::Errno::NOENT) => continue,
                Err(x) => {
                    self.error(format!("{shown}: Cannot open: {}", errtext(&x.into())));
                    continue;
                }
            };
            if let (Some(id), Ok(st)) = (d.id, rustix::fs::fstat(&fd)) {
                if id != (st.st_dev, st.st_ino) {
                    continue;
                }
            }
            if let Some((u, g)) = d.owner {
                if let Err(x) =
                    rustix::fs::fchown(&fd, Some(rustix::fs::Uid::from_raw(u)), Some(rustix::fs::Gid::from_raw(g)))
                {
                    self.error(format!("{shown}: Cannot change ownership to uid {u}, gid {g}: {}", errtext(&x.into())));
                }
            }
            if let Err(x) = rustix::fs::fchmod(&fd, Mode::from_raw_mode(d.mode)) {
                self.error(format!("{shown}: Cannot change mode to {:04o}: {}", d.mode, errtext(&x.into())));
            }
            if self.opts.xattrs {
                for (k, v) in &d.xattrs {
                    if let Err(x) = rustix::fs::fsetxattr(&fd, k.as_slice(), v, XattrFlags::empty()) {
                        self.error(format!("{shown}: Cannot set xattr: {}", errtext(&x.into())));
                    }
                }
            }
            if let Err(x) = rustix::fs::futimens(&fd, &self.times(d.mtime)) {
                self.error(format!("{shown}: Cannot utime: {}", errtext(&x.into())));
            }
        }
    }
}
