//! `qtar -c`: plan with the engine, then write members in read order.

use std::collections::HashSet;
use std::ffi::OsStr;
use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use qtar_archive::{AppendOutcome, ArchiveWriter, Compression, EntryKind, EntryMeta, Format, WriteOptions};
use qtar_engine::{Entry, FileKind, Order, Walk};

use super::args::{Args, Operand, Sort};
use super::checkpoint::{Action, Checkpoints, totals_line};
use super::names::{Excluder, Owners, parse_owner};
use crate::diag::{Diag, Status, quote, strerror};

/// Where the archive goes.
enum Sink {
    Stdout,
    /// A regular file written under a temporary name, renamed into place at the end.
    Temp {
        tmp: tempfile::NamedTempFile,
        dest: PathBuf,
    },
    /// A device, FIFO or other special file, written in place.
    Special,
}

fn compression(args: &Args) -> Compression {
    if args.gzip {
        Compression::Gzip
    } else if args.bzip2 {
        Compression::Bzip2
    } else if args.xz {
        Compression::Xz
    } else if args.zstd {
        Compression::Zstd
    } else {
        Compression::None
    }
}

fn format(args: &Args) -> Result<Format, String> {
    if args.old_archive && args.format.is_none() {
        return Ok(Format::V7);
    }
    Ok(match args.format.as_deref() {
        None | Some("gnu") => Format::Gnu,
        Some("oldgnu") => Format::OldGnu,
        Some("pax") => Format::Pax,
        Some("posix") => Format::Posix,
        Some("ustar") => Format::Ustar,
        Some("v7") => Format::V7,
        Some(f) => return Err(format!("{f}: Invalid archive format")),
    })
}

fn parse_mtime(spec: &str) -> Result<qtar_archive::Timestamp, String> {
    if spec.starts_with('/') || spec.starts_with('.') {
        let m = std::fs::metadata(spec).map_err(|e| format!("{spec}: Cannot stat: {}", strerror(&e)))?;
        return Ok(qtar_archive::Timestamp::new(m.mtime(), m.mtime_nsec() as u32));
    }
    if let Some(secs) = spec.strip_prefix('@') {
        if let Ok(s) = secs.parse::<i64>() {
            return Ok(qtar_archive::Timestamp::new(s, 0));
        }
    }
    let dt = parse_datetime::parse_datetime(spec)
        .map_err(|_| format!("Substituting -9223372036854775807 for unknown date format '{spec}'"))?;
    let z = dt.into_zoned().ok_or_else(|| format!("{spec}: date out of range"))?;
    let ts = z.timestamp();
    Ok(qtar_archive::Timestamp::new(ts.as_second(), ts.subsec_nanosecond().max(0) as u32))
}

fn umask() -> u32 {
    let old = nix::sys::stat::umask(nix::sys::stat::Mode::from_bits_truncate(0o022));
    nix::sys::stat::umask(old);
    old.bits()
}

struct Ctx<'a> {
    args: &'a Args,
    diag: &'a Diag,
    owners: Owners,
    warned_prefix: HashSet<String>,
    /// (dev, ino) of the archive being written, and of an old one it replaces.
    archive_ids: Vec<(u64, u64)>,
    verbose_to_stderr: bool,
}

impl Ctx<'_> {
    fn member_name(&mut self, path: &[u8]) -> Vec<u8> {
        if self.args.absolute_names {
            return path.to_vec();
        }
        let (name, warning) = qtar_archive::member_name(path);
        if let Some(w) = warning {
            if self.warned_prefix.insert(w.clone()) {
                self.diag.say(w);
            }
        }
        name
    }

    fn verbose(&self, path: &[u8], kind: FileKind) {
        if self.args.verbose == 0 {
            return;
        }
        let mut line = path.to_vec();
        if kind == FileKind::Dir && !line.ends_with(b"/") {
            line.push(b'/');
        }
        line.push(b'\n');
        if self.verbose_to_stderr {
            let _ = io::stderr().write_all(&line);
        } else {
            let mut o = io::stdout().lock();
            let _ = o.write_all(&line);
        }
    }

    fn entry_meta(&mut self, e: &Entry<'_>, kind: EntryKind) -> EntryMeta {
        let m = e.meta();
        let ts = |t: qtar_engine::Timestamp| qtar_archive::Timestamp::new(t.sec, t.nsec);
        let (uname, gname) =
            if self.args.numeric_owner { (None, None) } else { (self.owners.user(m.uid), self.owners.group(m.gid)) };
        let size = if kind == EntryKind::File { m.size } else { 0 };
        let xattrs = if self.args.xattrs { self.xattrs(e) } else { Vec::new() };
        EntryMeta {
            kind,
            mode: m.perm(),
            uid: m.uid as u64,
            gid: m.gid as u64,
            uname,
            gname,
            size,
            mtime: ts(m.mtime),
            atime: ts(m.atime),
            ctime: ts(m.ctime),
            xattrs,
        }
    }

    fn xattrs(&self, e: &Entry<'_>) -> Vec<(Vec<u8>, Vec<u8>)> {
        let path = e.path();
        let list = if self.args.dereference { xattr::list_deref(&path) } else { xattr::list(&path) };
        let mut out = Vec::new();
        match list {
            Ok(names) => {
                for n in names {
                    let nb = n.as_bytes();
                    // ACLs are --acls' business; GNU tar --xattrs skips them too.
                    if nb.starts_with(b"system.posix_acl_") {
                        continue;
                    }
                    let v = if self.args.dereference { xattr::get_deref(&path, &n) } else { xattr::get(&path, &n) };
                    if let Ok(Some(v)) = v {
                        out.push((nb.to_vec(), v));
                    }
                }
            }
            Err(err) if err.raw_os_error() == Some(libc_enotsup()) => {}
            Err(err) => self.diag.say(format!("{}: Cannot get xattr list: {}", quote(&e.path_bytes()), strerror(&err))),
        }
        out.sort();
        out
    }
}

fn libc_enotsup() -> i32 {
    nix::errno::Errno::EOPNOTSUPP as i32
}

/// The lab's knobs for ablation runs (`benches/README.md`), from the
/// environment: `QTAR_META_WORKERS=N` metadata threads, `QTAR_DEVICE_LAYOUT=0`
/// no reads of the block device (inode-number keys, no metadata prefetch),
/// `QTAR_ROTATIONAL=0|1` the device kind, whatever sysfs says.
fn lab_knobs(mut walk: Walk) -> Walk {
    match std::env::var("QTAR_ROTATIONAL").as_deref() {
        Ok("0") => walk = walk.assume_rotational(false),
        Ok("1") => walk = walk.assume_rotational(true),
        _ => {}
    }
    if let Some(n) = std::env::var("QTAR_META_WORKERS").ok().and_then(|v| v.parse().ok()) {
        walk = walk.workers(n);
    }
    if std::env::var("QTAR_DEVICE_LAYOUT").as_deref() == Ok("0") {
        walk = walk.exact_layout(false);
    }
    walk
}

pub fn run(args: &Args, operands: &[Operand], diag: &Diag) -> ExitCode {
    let fmt = match format(args) {
        Ok(f) => f,
        Err(e) => return diag.fatal(e),
    };
    if operands.is_empty() {
        diag.say("Cowardly refusing to create an empty archive");
        diag.say(format!("Try '{} --help' for more information.", diag.prog()));
        return ExitCode::from(2);
    }
    let mut opts = WriteOptions::new(fmt);
    opts.numeric_owner = args.numeric_owner;
    opts.xattrs = args.xattrs && !args.no_xattrs;
    opts.sparse = args.sparse;
    if let Some(b) = args.blocking_factor {
        opts.record_size = b.max(1) * 512;
    }
    for (spec, user) in [(&args.owner, true), (&args.group, false)] {
        if let Some(s) = spec {
            match parse_owner(s, user) {
                Ok(v) if user => opts.owner = Some(v),
                Ok(v) => opts.group = Some(v),
                Err(e) => return diag.fatal(e),
            }
        }
    }
    if let Some(m) = &args.mtime {
        match parse_mtime(m) {
            Ok(t) => opts.mtime = Some(t),
            Err(e) => return diag.fatal(e),
        }
    }
    let mut actions = Vec::new();
    for a in &args.checkpoint_action {
        match Action::parse(a) {
            Ok(a) => actions.push(a),
            Err(e) => return diag.fatal(e),
        }
    }
    let mut patterns: Vec<Vec<u8>> = args.exclude.iter().map(|p| p.as_bytes().to_vec()).collect();
    for f in &args.exclude_from {
        match std::fs::read(f) {
            Ok(d) => patterns.extend(d.split(|&b| b == b'\n').filter(|l| !l.is_empty()).map(<[u8]>::to_vec)),
            Err(e) => return diag.fatal(format!("{}: Cannot open: {}", f.display(), strerror(&e))),
        }
    }
    let excluder = match Excluder::new(&patterns, args.exclude_vcs) {
        Ok(x) => std::sync::Arc::new(x),
        Err(e) => return diag.fatal(e),
    };

    // Open the archive.
    let name = super::archive_name(args);
    let mut archive_ids = Vec::new();
    let (sink, out): (Sink, Box<dyn Write>) = if name == "-" {
        (Sink::Stdout, Box::new(BufWriter::with_capacity(1 << 20, io::stdout().lock())))
    } else {
        let dest = PathBuf::from(&name);
        let existing = std::fs::metadata(&dest).ok();
        if let Some(m) = &existing {
            archive_ids.push((m.dev(), m.ino()));
        }
        let special = existing.as_ref().is_some_and(|m| {
            let t = m.file_type();
            t.is_char_device() || t.is_block_device() || t.is_fifo() || t.is_socket()
        });
        if special {
            match std::fs::OpenOptions::new().write(true).open(&dest) {
                Ok(f) => (Sink::Special, Box::new(BufWriter::with_capacity(1 << 20, f))),
                Err(e) => return diag.fatal(format!("{}: Cannot open: {}", quote(name.as_bytes()), strerror(&e))),
            }
        } else {
            let dir = dest.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
            let tmp = match tempfile::Builder::new().prefix(".qtar-").suffix(".tmp").tempfile_in(dir) {
                Ok(t) => t,
                Err(e) => return diag.fatal(format!("{}: Cannot open: {}", quote(name.as_bytes()), strerror(&e))),
            };
            let file = match tmp.as_file().try_clone() {
                Ok(f) => f,
                Err(e) => return diag.fatal(format!("{}: Cannot open: {}", quote(name.as_bytes()), strerror(&e))),
            };
            if let Ok(m) = file.metadata() {
                archive_ids.push((m.dev(), m.ino()));
            }
            (Sink::Temp { tmp, dest }, Box::new(BufWriter::with_capacity(1 << 20, file)))
        }
    };
    let verbose_to_stderr = matches!(sink, Sink::Stdout);
    let compressed = match qtar_archive::compress_writer(out, compression(args)) {
        Ok(c) => c,
        Err(e) => return diag.fatal(format!("{}: {}", quote(name.as_bytes()), strerror(&e))),
    };
    let record = opts.record_size as u64;
    let counted =
        Checkpoints::new(compressed, args.checkpoint.unwrap_or(0), record, actions, diag.prog(), verbose_to_stderr);
    let mut writer = ArchiveWriter::new(counted, opts);

    // Plan.
    let order = match args.sort.unwrap_or_default() {
        Sort::Disk => Order::Disk,
        Sort::Inode => Order::Inode,
        Sort::Name => Order::Name,
        Sort::None => Order::None,
    };
    let mut walk = Walk::new()
        .order(order)
        .follow_links(args.dereference)
        .one_file_system(args.one_file_system)
        .hard_links(!args.hard_dereference);
    for op in operands {
        let path = match &op.dir {
            Some(d) => d.join(OsStr::from_bytes(&op.name)),
            None => PathBuf::from(OsStr::from_bytes(&op.name)),
        };
        walk = walk.root_as(path, op.name.clone());
    }
    walk = lab_knobs(walk);
    let ex = std::sync::Arc::clone(&excluder);
    walk = walk.filter(move |p, _| !ex.excluded(p));
    let plan = match walk.plan() {
        Ok(p) => p,
        Err(e) => return diag.fatal(e),
    };
    if args.verbose > 0 {
        diag.say(format!("reading data in {}", plan.order_used()));
    }
    for e in plan.errors() {
        if e.is_vanished() && e.op() != qtar_engine::Op::Stat {
            diag.warn(
                Status::Differs,
                format!("{}: File removed before we read it", quote(e.path().as_os_str().as_bytes())),
            );
        } else {
            report_read_error(diag, args, e);
        }
    }

    let mut ctx =
        Ctx { args, diag, owners: Owners::default(), warned_prefix: HashSet::new(), archive_ids, verbose_to_stderr };
    let mut names: Vec<Option<Vec<u8>>> = vec![None; plan.len()];
    for item in plan.reader() {
        let item = match item {
            Ok(i) => i,
            Err(e) => {
                report_read_error(diag, args, &e);
                continue;
            }
        };
        let e = item.entry;
        let m = e.meta();
        let path = e.path_bytes();
        // Roots are not filtered by the walk: apply --exclude to them here.
        if e.is_root() && excluder.excluded(&path) {
            continue;
        }
        if ctx.archive_ids.contains(&(m.dev, m.ino)) {
            diag.say(format!("{}: file is the archive; not dumped", quote(&path)));
            continue;
        }
        let kind = match m.kind {
            FileKind::Socket => {
                diag.say(format!("{}: socket ignored", quote(&path)));
                continue;
            }
            FileKind::Dir => EntryKind::Dir,
            FileKind::Symlink => match e.read_link() {
                Ok(t) => EntryKind::Symlink { target: t.as_os_str().as_bytes().to_vec() },
                Err(err) => {
                    report_read_error(diag, args, &err);
                    continue;
                }
            },
            FileKind::Fifo => EntryKind::Fifo,
            FileKind::CharDev => EntryKind::CharDev { major: m.rdev_major, minor: m.rdev_minor },
            FileKind::BlockDev => EntryKind::BlockDev { major: m.rdev_major, minor: m.rdev_minor },
            FileKind::File | FileKind::Unknown => match e.hard_link_target().and_then(|t| names[t.index()].clone()) {
                Some(target) => EntryKind::HardLink { target },
                None => EntryKind::File,
            },
        };
        let member = ctx.member_name(&path);
        let meta = ctx.entry_meta(&e, kind.clone());
        ctx.verbose(&path, m.kind);
        if e.is_other_file_system() && args.verbose > 0 {
            diag.say(format!("{}: file is on a different filesystem; not dumped", quote(&path)));
        }
        let mut file = item.file;
        let data = if kind == EntryKind::File { file.as_mut() } else { None };
        match writer.append(&member, &meta, data) {
            Ok(outcome) => {
                names[e.index()] = Some(member);
                if let AppendOutcome::Shrank { missing } = outcome {
                    let s = if missing == 1 { "byte" } else { "bytes" };
                    let st = if args.ignore_failed_read { Status::Ok } else { Status::Differs };
                    diag.warn(st, format!("{}: File shrank by {missing} {s}; padding with zeros", quote(&path)));
                }
                if let Some(f) = &file {
                    changed_while_read(diag, &path, &m, f, outcome);
                }
            }
            Err(err) => diag.error(err),
        }
    }
    drop(plan);

    let counted = match writer.finish() {
        Ok(w) => w,
        Err(e) => return fail_write(diag, sink, e),
    };
    let bytes = counted.bytes();
    let started = counted.started();
    let finished = counted.into_inner().finish().and_then(|mut o| o.flush());
    if let Err(e) = finished {
        return fail_write(diag, sink, e);
    }
    if let Sink::Temp { tmp, dest } = sink {
        let mode = 0o666 & !umask();
        let _ = std::fs::set_permissions(tmp.path(), std::os::unix::fs::PermissionsExt::from_mode(mode));
        if let Err(e) = tmp.persist(&dest) {
            return diag.fatal(format!(
                "{}: Cannot rename: {}",
                quote(dest.as_os_str().as_bytes()),
                strerror(&e.error)
            ));
        }
    }
    if args.totals {
        eprintln!("{}", totals_line(bytes, started));
    }
    diag.finish()
}

fn fail_write(diag: &Diag, sink: Sink, e: impl std::fmt::Display) -> ExitCode {
    // The temporary file is removed on drop: no half-written archive under its name.
    drop(sink);
    diag.fatal(format!("Cannot write: {e}"))
}

fn report_read_error(diag: &Diag, args: &Args, e: &qtar_engine::Error) {
    let msg =
        format!("{}: {}", quote(e.path().as_os_str().as_bytes()), e.to_string().split_once(": ").map_or("", |x| x.1));
    if args.ignore_failed_read {
        diag.warn(Status::Ok, msg);
    } else {
        diag.error(msg);
    }
}

/// GNU's check after reading a file: ctime moved or the size grew.
fn changed_while_read(diag: &Diag, path: &[u8], before: &qtar_engine::Meta, f: &File, outcome: AppendOutcome) {
    let Ok(now) = f.metadata() else { return };
    let ctime_moved = now.ctime() != before.ctime.sec || now.ctime_nsec() as u32 != before.ctime.nsec;
    if ctime_moved || now.size() > before.size || outcome == AppendOutcome::Grew {
        diag.warn(Status::Differs, format!("{}: file changed as we read it", quote(path)));
    }
}
