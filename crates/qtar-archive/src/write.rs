//! Writing archives: headers encoded like GNU tar 1.34 `create.c`.

use std::fs::File;
use std::io::{self, Read, Write};
use std::os::unix::fs::{FileExt, MetadataExt};

use crate::error::{ArchiveError, lossy};
use crate::meta::{EntryKind, EntryMeta, Format, Timestamp, WriteOptions};
use crate::sparse::{self, Region};

/// GNU tar's default record size (`-b 20`): 20 blocks of 512 bytes.
pub const DEFAULT_RECORD_SIZE: usize = 10240;
pub(crate) const BLOCK: usize = 512;
const NAME_FIELD: usize = 100;
const PREFIX_FIELD: usize = 155;
const MAX_OCTAL7: u64 = 0o7777777;
const MAX_OCTAL11: u64 = 0o77777777777;

/// What happened to a regular file's data while it was archived.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AppendOutcome {
    /// The data had exactly the announced size.
    Ok,
    /// The file ended early; the member was padded with `missing` zero bytes
    /// (GNU: "File shrank by N bytes; padding with zeros").
    Shrank {
        /// Number of zero bytes written in place of missing data.
        missing: u64,
    },
    /// The file had more data than announced; only `meta.size` bytes were
    /// stored (GNU: "file changed as we read it").
    Grew,
}

impl AppendOutcome {
    /// The warning GNU tar 1.34 prints for this outcome (after `tar: `), with
    /// the member name quoted by the caller as it likes; `None` for `Ok`.
    pub fn gnu_message(&self, name: &str) -> Option<String> {
        match self {
            AppendOutcome::Ok => None,
            AppendOutcome::Shrank { missing: 1 } => Some(format!("{name}: File shrank by 1 byte; padding with zeros")),
            AppendOutcome::Shrank { missing } => {
                Some(format!("{name}: File shrank by {missing} bytes; padding with zeros"))
            }
            AppendOutcome::Grew => Some(format!("{name}: file changed as we read it")),
        }
    }

    /// GNU's exit status for this outcome: 1 ("some files differ") for a
    /// file that changed size while read, else 0.
    pub fn exit_status(&self) -> i32 {
        if *self == AppendOutcome::Ok { 0 } else { 1 }
    }
}

/// Streams tar members to `W`, exactly as GNU tar 1.34 lays them out.
pub struct ArchiveWriter<W: Write> {
    out: W,
    opts: WriteOptions,
    format: Format,
    written: u64,
    buf: Vec<u8>,
}

/// A pax extended header under construction: records in GNU's order.
#[derive(Default)]
struct PaxRecords {
    data: Vec<u8>,
}

impl PaxRecords {
    fn push(&mut self, key: &[u8], value: &[u8]) {
        // "%d %s=%s\n" where the length counts itself.
        let body = key.len() + value.len() + 3; // ' ', '=', '\n'
        let mut len = body + 1;
        loop {
            let total = body + len.to_string().len();
            if total == len {
                break;
            }
            len = total;
        }
        self.data.extend_from_slice(len.to_string().as_bytes());
        self.data.push(b' ');
        self.data.extend_from_slice(key);
        self.data.push(b'=');
        self.data.extend_from_slice(value);
        self.data.push(b'\n');
    }
    fn push_time(&mut self, key: &[u8], t: Timestamp) {
        self.push(key, pax_time(t).as_bytes());
    }
}

/// GNU's `code_timespec`: seconds, then up to 9 fraction digits with trailing
/// zeros removed; negative times with a fraction are written as `-S.F`.
pub(crate) fn pax_time(t: Timestamp) -> String {
    let (neg, whole, frac) = if t.sec < 0 && t.nsec != 0 {
        (true, (-(t.sec + 1)) as u64, 1_000_000_000 - t.nsec)
    } else if t.sec < 0 {
        (true, t.sec.unsigned_abs(), 0)
    } else {
        (false, t.sec as u64, t.nsec)
    };
    let mut s = String::new();
    if neg {
        s.push('-');
    }
    s.push_str(&whole.to_string());
    if frac != 0 {
        let f = format!("{frac:09}");
        s.push('.');
        s.push_str(f.trim_end_matches('0'));
    }
    s
}

/// Writes `v` as zero-padded octal in `field.len() - 1` digits and a NUL.
fn octal(field: &mut [u8], v: u64) {
    let digits = field.len() - 1;
    let s = format!("{v:0digits$o}");
    field[..digits].copy_from_slice(&s.as_bytes()[s.len() - digits..]);
    field[digits] = 0;
}

fn max_octal(len: usize) -> u64 {
    (1u64 << (3 * (len - 1))) - 1
}

/// GNU `to_chars`: octal when it fits, base-256 in the GNU formats, an error
/// otherwise.
fn num_field(
    field: &mut [u8],
    v: i128,
    format: Format,
    member: &[u8],
    type_name: &'static str,
) -> Result<(), ArchiveError> {
    let len = field.len();
    if v >= 0 && v <= i128::from(max_octal(len)) {
        octal(field, v as u64);
        return Ok(());
    }
    let bits = 8 * len as u32 - 1;
    let lim = 1i128 << bits.min(126);
    if format.is_gnu() && v >= -lim && v < lim {
        let bytes = v.to_be_bytes(); // 16 bytes, two's complement
        field.copy_from_slice(&bytes[16 - len..]);
        if v >= 0 {
            field[0] |= 0x80;
        }
        return Ok(());
    }
    let (min, max) = if format.is_gnu() { (-lim, lim - 1) } else { (0, i128::from(max_octal(len))) };
    Err(ArchiveError::ValueOutOfRange { member: lossy(member), value: v, type_name, min, max })
}

fn copy_trunc(field: &mut [u8], s: &[u8]) {
    let n = s.len().min(field.len());
    field[..n].copy_from_slice(&s[..n]);
}

fn set_checksum(h: &mut [u8; BLOCK]) {
    h[148..156].fill(b' ');
    let sum: u32 = h.iter().map(|&b| u32::from(b)).sum();
    let s = format!("{sum:06o}");
    h[148..154].copy_from_slice(&s.as_bytes()[s.len() - 6..]);
    h[154] = 0;
    h[155] = b' ';
}

fn set_magic(h: &mut [u8; BLOCK], format: Format) {
    match format {
        Format::V7 => {}
        Format::Gnu | Format::OldGnu => h[257..265].copy_from_slice(b"ustar  \0"),
        _ => h[257..265].copy_from_slice(b"ustar\x0000"),
    }
}

/// GNU `start_private_header`: for `././@LongLink` and pax `x` headers.
fn private_header(name: &[u8], size: u64, t: i64, typeflag: u8) -> [u8; BLOCK] {
    let mut block = tar::Header::new_old();
    let h = block.as_mut_bytes();
    copy_trunc(&mut h[0..100], name);
    octal(&mut h[124..136], size.min(MAX_OCTAL11));
    octal(&mut h[136..148], t.clamp(0, MAX_OCTAL11 as i64) as u64);
    octal(&mut h[100..108], 0o644);
    octal(&mut h[108..116], 0);
    octal(&mut h[116..124], 0);
    h[257..265].copy_from_slice(b"ustar\x0000");
    h[156] = typeflag;
    *h
}

fn push_data(out: &mut Vec<u8>, data: &[u8]) {
    out.extend_from_slice(data);
    let pad = (BLOCK - data.len() % BLOCK) % BLOCK;
    out.resize(out.len() + pad, 0);
}

/// GNU `write_gnu_long_link`: an `L` or `K` record holding `name` and a NUL.
/// Its owner names are root's, or empty with `--numeric-owner`.
fn gnu_long_link(out: &mut Vec<u8>, name: &[u8], typeflag: u8, numeric_owner: bool) {
    let mut h = private_header(b"././@LongLink", name.len() as u64 + 1, 0, typeflag);
    h[257..265].copy_from_slice(b"ustar  \0");
    if !numeric_owner {
        copy_trunc(&mut h[265..297], b"root");
        copy_trunc(&mut h[297..329], b"root");
    }
    set_checksum(&mut h);
    out.extend_from_slice(&h);
    let mut data = name.to_vec();
    data.push(0);
    push_data(out, &data);
}

/// `dir/PaxHeaders/base` like GNU's default `%d/PaxHeaders/%f`.
fn pax_header_name(name: &[u8], middle: &[u8]) -> Vec<u8> {
    let trimmed = {
        let mut n = name;
        while n.len() > 1 && n.ends_with(b"/") {
            n = &n[..n.len() - 1];
        }
        n
    };
    let (dir, base) = match trimmed.iter().rposition(|&c| c == b'/') {
        Some(0) => (&b"/"[..], &trimmed[1..]),
        Some(i) => (&trimmed[..i], &trimmed[i + 1..]),
        None => (&b"."[..], trimmed),
    };
    let mut v = dir.to_vec();
    if !v.ends_with(b"/") {
        v.push(b'/');
    }
    v.extend_from_slice(middle);
    v.push(b'/');
    v.extend_from_slice(base);
    v
}

/// GNU `split_long_name`: index of the slash separating prefix and name.
fn split_long_name(name: &[u8]) -> usize {
    let mut length = name.len();
    if length > PREFIX_FIELD + 1 {
        length = PREFIX_FIELD + 1;
    } else if name[length - 1] == b'/' {
        length -= 1;
    }
    let mut i = length - 1;
    while i > 0 {
        if name[i] == b'/' {
            break;
        }
        i -= 1;
    }
    i
}

fn xattr_key(name: &[u8]) -> Vec<u8> {
    let mut k = b"SCHILY.xattr.".to_vec();
    for &c in name {
        match c {
            b'%' => k.extend_from_slice(b"%25"),
            b'=' => k.extend_from_slice(b"%3D"),
            _ => k.push(c),
        }
    }
    k
}

/// How the data part of a member is laid out.
enum Body {
    /// No data (links, dirs, devices).
    None,
    /// `size` plain bytes.
    Plain(u64),
    /// Old GNU sparse (`S`): data regions, stored size, real size.
    GnuSparse(Vec<Region>, u64),
    /// pax GNU sparse 1.0: map block text plus regions.
    PaxSparse(Vec<Region>, u64),
}

impl<W: Write> ArchiveWriter<W> {
    /// Starts an archive on `out`. Nothing is written until the first append.
    pub fn new(out: W, opts: WriteOptions) -> Self {
        let mut format = opts.format;
        if opts.xattrs {
            // GNU tar 1.34 silently switches every format to POSIX for --xattrs.
            format = Format::Pax;
        }
        ArchiveWriter { out, opts, format, written: 0, buf: Vec::with_capacity(1 << 16) }
    }

    /// The format actually written (GNU turns `gnu` + `--xattrs` into pax).
    pub fn format(&self) -> Format {
        self.format
    }

    /// Bytes written to the output so far (for `--totals`, `--checkpoint`).
    pub fn bytes_written(&self) -> u64 {
        self.written
    }

    fn emit(&mut self, bytes: &[u8]) -> Result<(), ArchiveError> {
        self.out.write_all(bytes).map_err(|e| ArchiveError::io(b"archive", "write error", e))?;
        self.written += bytes.len() as u64;
        Ok(())
    }

    /// Appends one member.
    ///
    /// `name` is the member name, already relative (see
    /// [`crate::member_name`]); directories get a trailing `/` if missing.
    /// For regular files, `data` is the open file and exactly `meta.size`
    /// bytes are stored: if the file ends early the rest is zero-filled and
    /// [`AppendOutcome::Shrank`] is returned, if it has more data the member
    /// stops at `meta.size` and [`AppendOutcome::Grew`] is returned. `None`
    /// for a regular file stores zeros. Data is read from the file's current
    /// position (normally 0) with `read`, or with `pread` at the data
    /// regions' offsets for sparse members. With `WriteOptions::sparse`, holes
    /// found with SEEK_DATA/SEEK_HOLE are stored as a sparse member.
    ///
    /// On a format error (name too long, value out of range) nothing is
    /// written and the archive stays valid.
    pub fn append(
        &mut self,
        name: &[u8],
        meta: &EntryMeta,
        data: Option<&mut File>,
    ) -> Result<AppendOutcome, ArchiveError> {
        let mut name = name.to_vec();
        if meta.kind == EntryKind::Dir && !name.ends_with(b"/") {
            name.push(b'/');
        }
        let body = self.plan_body(&name, meta, data.as_deref())?;
        let headers = self.build_headers(&name, meta, &body)?;
        self.emit(&headers)?;
        let outcome = match (&body, data) {
            (Body::None, _) => AppendOutcome::Ok,
            (Body::Plain(size), data) => self.copy_plain(&name, *size, data)?,
            (Body::GnuSparse(regions, _), Some(f)) => self.copy_regions(&name, regions, f)?,
            (Body::PaxSparse(regions, _), Some(f)) => {
                let map = sparse::pax_map_block(regions, meta.size);
                self.emit(&map)?;
                self.copy_regions(&name, regions, f)?
            }
            _ => unreachable!("sparse bodies are only planned with data"),
        };
        Ok(outcome)
    }

    fn plan_body(&self, name: &[u8], meta: &EntryMeta, data: Option<&File>) -> Result<Body, ArchiveError> {
        if self.format == Format::V7
            && matches!(meta.kind, EntryKind::Fifo | EntryKind::CharDev { .. } | EntryKind::BlockDev { .. })
        {
            return Err(ArchiveError::Unsupported {
                member: lossy(name),
                reason: "Unknown file type; file ignored".into(),
            });
        }
        if meta.kind != EntryKind::File {
            return Ok(Body::None);
        }
        let (true, Some(f)) = (self.opts.sparse, data) else {
            return Ok(Body::Plain(meta.size));
        };
        if self.format == Format::V7 || self.format == Format::Ustar || meta.size == 0 {
            return Ok(Body::Plain(meta.size));
        }
        let st = f.metadata().map_err(|e| ArchiveError::io(name, "cannot stat", e))?;
        // GNU's ST_IS_SPARSE: fewer blocks allocated than the size needs.
        if st.blocks() >= meta.size.div_ceil(512) {
            return Ok(Body::Plain(meta.size));
        }
        let Some(regions) = sparse::scan(f, meta.size).map_err(|e| ArchiveError::io(name, "cannot seek", e))? else {
            return Ok(Body::Plain(meta.size));
        };
        let stored: u64 = regions.iter().map(|r| r.len).sum();
        if self.format.is_gnu() { Ok(Body::GnuSparse(regions, stored)) } else { Ok(Body::PaxSparse(regions, stored)) }
    }

    fn build_headers(&self, name: &[u8], meta: &EntryMeta, body: &Body) -> Result<Vec<u8>, ArchiveError> {
        let fmt = self.format;
        let member = name;
        let mut pre = Vec::new(); // L/K records
        let mut pax = PaxRecords::default();
        let mut block = tar::Header::new_old();
        let h = block.as_mut_bytes();

        let mtime = self.opts.mtime.unwrap_or(meta.mtime);
        let (uid, uname_over) = match &self.opts.owner {
            Some((n, id)) => (*id, Some(n.clone().unwrap_or_default())),
            None => (meta.uid, None),
        };
        let (gid, gname_over) = match &self.opts.group {
            Some((n, id)) => (*id, Some(n.clone().unwrap_or_default())),
            None => (meta.gid, None),
        };

        // pax sparse 1.0: the GNU.sparse.* records come first and the ustar
        // name becomes %d/GNUSparseFile.%p/%f.
        let mut hname = name.to_vec();
        let size_field = match body {
            Body::None => 0,
            Body::Plain(s) => *s,
            Body::GnuSparse(_, stored) => *stored,
            Body::PaxSparse(regions, stored) => {
                pax.push(b"GNU.sparse.major", b"1");
                pax.push(b"GNU.sparse.minor", b"0");
                pax.push(b"GNU.sparse.name", name);
                pax.push(b"GNU.sparse.realsize", meta.size.to_string().as_bytes());
                let middle = format!("GNUSparseFile.{}", std::process::id());
                hname = pax_header_name(name, middle.as_bytes());
                stored + sparse::pax_map_block(regions, meta.size).len() as u64
            }
        };
        let threshold = NAME_FIELD - usize::from(fmt == Format::OldGnu);

        // Link target (GNU write_long_link, done before start_header).
        let link: Option<&[u8]> = match &meta.kind {
            EntryKind::Symlink { target } | EntryKind::HardLink { target } => Some(target),
            _ => None,
        };
        if let Some(target) = link {
            if fmt.is_pax() && target.len() <= threshold && !target.is_ascii() {
                pax.push(b"linkpath", target);
            }
            if target.len() > threshold {
                match fmt {
                    Format::Gnu | Format::OldGnu => gnu_long_link(&mut pre, target, b'K', self.opts.numeric_owner),
                    Format::Pax | Format::Posix => pax.push(b"linkpath", target),
                    Format::Ustar | Format::V7 => {
                        return Err(ArchiveError::LinkNameTooLong { member: lossy(member) });
                    }
                }
            }
            copy_trunc(&mut h[157..257], target);
        }

        // Name (GNU write_long_name / write_short_name).
        if fmt.is_pax() && hname.len() <= threshold && !hname.is_ascii() {
            // GNU stores non-ASCII names in a pax record too.
            pax.push(b"path", &hname);
            copy_trunc(&mut h[0..100], &hname);
        } else if hname.len() > threshold {
            match fmt {
                Format::Gnu | Format::OldGnu => {
                    gnu_long_link(&mut pre, &hname, b'L', self.opts.numeric_owner);
                    copy_trunc(&mut h[0..threshold], &hname);
                }
                Format::Pax | Format::Posix => {
                    pax.push(b"path", &hname);
                    copy_trunc(&mut h[0..100], &hname);
                }
                Format::V7 => {
                    return Err(ArchiveError::NameTooLong { member: lossy(member), detail: "max 99".into() });
                }
                Format::Ustar => {
                    let len = hname.len();
                    if len > PREFIX_FIELD + NAME_FIELD + 1 {
                        return Err(ArchiveError::NameTooLong {
                            member: lossy(member),
                            detail: format!("max {}", PREFIX_FIELD + NAME_FIELD + 1),
                        });
                    }
                    let i = split_long_name(&hname);
                    let nlen = len - i - 1;
                    if i == 0 || nlen > NAME_FIELD || nlen == 0 {
                        return Err(ArchiveError::NameTooLong {
                            member: lossy(member),
                            detail: "cannot be split".into(),
                        });
                    }
                    copy_trunc(&mut h[345..500], &hname[..i]);
                    copy_trunc(&mut h[0..100], &hname[i + 1..]);
                }
            }
        } else {
            copy_trunc(&mut h[0..100], &hname);
        }

        octal(&mut h[100..108], u64::from(meta.mode & 0o7777));

        let pax_fmt = fmt.is_pax();
        let uid_v = if pax_fmt && uid > MAX_OCTAL7 {
            pax.push(b"uid", uid.to_string().as_bytes());
            0
        } else {
            uid
        };
        num_field(&mut h[108..116], i128::from(uid_v), fmt, member, "uid_t")?;
        let gid_v = if pax_fmt && gid > MAX_OCTAL7 {
            pax.push(b"gid", gid.to_string().as_bytes());
            0
        } else {
            gid
        };
        num_field(&mut h[116..124], i128::from(gid_v), fmt, member, "gid_t")?;
        let size_v = if pax_fmt && size_field > MAX_OCTAL11 {
            pax.push(b"size", size_field.to_string().as_bytes());
            0
        } else {
            size_field
        };
        num_field(&mut h[124..136], i128::from(size_v), fmt, member, "off_t")?;
        let mtime_out = mtime.sec < 0 || mtime.sec as u64 > MAX_OCTAL11;
        let mtime_v = if pax_fmt {
            if mtime_out || mtime.nsec != 0 {
                pax.push_time(b"mtime", mtime);
            }
            if mtime_out { 0 } else { mtime.sec }
        } else {
            mtime.sec
        };
        num_field(&mut h[136..148], i128::from(mtime_v), fmt, member, "time_t")?;

        match meta.kind {
            EntryKind::CharDev { major, minor } | EntryKind::BlockDev { major, minor } => {
                let mut maj = u64::from(major);
                let mut min = u64::from(minor);
                if pax_fmt && maj > MAX_OCTAL7 {
                    pax.push(b"devmajor", maj.to_string().as_bytes());
                    maj = 0;
                }
                if pax_fmt && min > MAX_OCTAL7 {
                    pax.push(b"devminor", min.to_string().as_bytes());
                    min = 0;
                }
                num_field(&mut h[329..337], i128::from(maj), fmt, member, "major_t")?;
                num_field(&mut h[337..345], i128::from(min), fmt, member, "minor_t")?;
            }
            _ if !fmt.is_gnu() => {
                octal(&mut h[329..337], 0);
                octal(&mut h[337..345], 0);
            }
            _ => {}
        }

        if pax_fmt {
            pax.push_time(b"atime", meta.atime);
            pax.push_time(b"ctime", meta.ctime);
        }

        h[156] = match (&meta.kind, body) {
            (_, Body::GnuSparse(..)) => b'S',
            (EntryKind::File, _) if fmt == Format::V7 => 0,
            (EntryKind::File, _) => b'0',
            (EntryKind::HardLink { .. }, _) => b'1',
            (EntryKind::Symlink { .. }, _) => b'2',
            (EntryKind::CharDev { .. }, _) => b'3',
            (EntryKind::BlockDev { .. }, _) => b'4',
            (EntryKind::Dir, _) => b'5',
            (EntryKind::Fifo, _) => b'6',
        };
        set_magic(h, fmt);

        if fmt != Format::V7 && !self.opts.numeric_owner {
            let uname = uname_over.unwrap_or_else(|| meta.uname.clone().unwrap_or_default());
            let gname = gname_over.unwrap_or_else(|| meta.gname.clone().unwrap_or_default());
            if pax_fmt && (uname.len() > 32 || !uname.is_ascii()) {
                pax.push(b"uname", &uname);
            }
            if pax_fmt && (gname.len() > 32 || !gname.is_ascii()) {
                pax.push(b"gname", &gname);
            }
            copy_trunc(&mut h[265..297], &uname);
            copy_trunc(&mut h[297..329], &gname);
        }

        if pax_fmt && self.opts.xattrs {
            for (k, v) in &meta.xattrs {
                pax.push(&xattr_key(k), v);
            }
        }

        // Old GNU sparse map: 4 entries in the header, 21 per extension block.
        let mut ext_blocks = Vec::new();
        if let Body::GnuSparse(regions, _) = body {
            let map = sparse::gnu_map(regions, meta.size);
            num_field(&mut h[483..495], i128::from(meta.size), fmt, member, "off_t")?;
            for (i, r) in map.iter().take(4).enumerate() {
                let o = 386 + 24 * i;
                num_field(&mut h[o..o + 12], i128::from(r.offset), fmt, member, "off_t")?;
                num_field(&mut h[o + 12..o + 24], i128::from(r.len), fmt, member, "off_t")?;
            }
            if map.len() > 4 {
                h[482] = 1;
                let chunks: Vec<_> = map[4..].chunks(21).collect();
                for (ci, chunk) in chunks.iter().enumerate() {
                    let mut e = [0u8; BLOCK];
                    for (i, r) in chunk.iter().enumerate() {
                        let o = 24 * i;
                        num_field(&mut e[o..o + 12], i128::from(r.offset), fmt, member, "off_t")?;
                        num_field(&mut e[o + 12..o + 24], i128::from(r.len), fmt, member, "off_t")?;
                    }
                    if ci + 1 < chunks.len() {
                        e[504] = 1;
                    }
                    ext_blocks.extend_from_slice(&e);
                }
            }
        }
        set_checksum(h);

        let mut out = pre;
        if !pax.data.is_empty() {
            let xname = pax_header_name(name, b"PaxHeaders");
            let mut x = private_header(&xname, pax.data.len() as u64, mtime.sec, b'x');
            set_checksum(&mut x);
            out.extend_from_slice(&x);
            push_data(&mut out, &pax.data);
        }
        out.extend_from_slice(h);
        out.extend_from_slice(&ext_blocks);
        Ok(out)
    }

    /// Copies exactly `size` bytes (block-padded) from `data`.
    fn copy_plain(&mut self, name: &[u8], size: u64, data: Option<&mut File>) -> Result<AppendOutcome, ArchiveError> {
        let mut buf = std::mem::take(&mut self.buf);
        buf.resize(1 << 16, 0);
        let mut file = data;
        let mut read_total = 0u64;
        let mut eof = file.is_none();
        let result = (|| {
            let mut remaining = size;
            while remaining > 0 {
                let want = remaining.min(buf.len() as u64) as usize;
                let mut got = 0;
                if let (false, Some(f)) = (eof, file.as_mut()) {
                    while got < want {
                        match f.read(&mut buf[got..want]) {
                            Ok(0) => {
                                eof = true;
                                break;
                            }
                            Ok(n) => got += n,
                            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                            Err(e) => return Err(ArchiveError::io(name, "read error", e)),
                        }
                    }
                }
                read_total += got as u64;
                buf[got..want].fill(0);
                self.emit(&buf[..want])?;
                remaining -= want as u64;
            }
            Ok(())
        })();
        self.buf = buf;
        result?;
        self.pad(size)?;
        if read_total < size {
            return Ok(AppendOutcome::Shrank { missing: size - read_total });
        }
        if let Some(f) = file {
            let mut one = [0u8; 1];
            loop {
                match f.read(&mut one) {
                    Ok(0) => break,
                    Ok(_) => return Ok(AppendOutcome::Grew),
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    Err(e) => return Err(ArchiveError::io(name, "read error", e)),
                }
            }
        }
        Ok(AppendOutcome::Ok)
    }

    fn copy_regions(&mut self, name: &[u8], regions: &[Region], f: &mut File) -> Result<AppendOutcome, ArchiveError> {
        let mut buf = std::mem::take(&mut self.buf);
        buf.resize(1 << 16, 0);
        let mut missing = 0u64;
        let mut total = 0u64;
        let result = (|| {
            for r in regions {
                let mut done = 0u64;
                while done < r.len {
                    let want = (r.len - done).min(buf.len() as u64) as usize;
                    let mut got = 0;
                    while got < want {
                        match f.read_at(&mut buf[got..want], r.offset + done + got as u64) {
                            Ok(0) => break,
                            Ok(n) => got += n,
                            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                            Err(e) => return Err(ArchiveError::io(name, "read error", e)),
                        }
                    }
                    missing += (want - got) as u64;
                    buf[got..want].fill(0);
                    self.emit(&buf[..want])?;
                    done += want as u64;
                }
                total += r.len;
            }
            Ok(())
        })();
        self.buf = buf;
        result?;
        self.pad(total)?;
        Ok(if missing > 0 { AppendOutcome::Shrank { missing } } else { AppendOutcome::Ok })
    }

    fn pad(&mut self, size: u64) -> Result<(), ArchiveError> {
        let pad = (BLOCK as u64 - size % BLOCK as u64) % BLOCK as u64;
        if pad > 0 {
            self.emit(&[0u8; BLOCK][..pad as usize])?;
        }
        Ok(())
    }

    /// Writes the end-of-archive marker (two zero blocks), pads to the record
    /// size like GNU tar, flushes, and returns the output.
    pub fn finish(mut self) -> Result<W, ArchiveError> {
        self.emit(&[0u8; 2 * BLOCK])?;
        let rec = self.opts.record_size.max(BLOCK) as u64;
        let pad = (rec - self.written % rec) % rec;
        let zeros = vec![0u8; pad as usize];
        self.emit(&zeros)?;
        self.out.flush().map_err(|e| ArchiveError::io(b"archive", "write error", e))?;
        Ok(self.out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outcome_messages() {
        assert_eq!(AppendOutcome::Ok.gnu_message("f"), None);
        assert_eq!(
            AppendOutcome::Shrank { missing: 10 }.gnu_message("f").unwrap(),
            "f: File shrank by 10 bytes; padding with zeros"
        );
        assert_eq!(AppendOutcome::Grew.gnu_message("f").unwrap(), "f: file changed as we read it");
        assert_eq!(AppendOutcome::Grew.exit_status(), 1);
    }

    #[test]
    fn pax_times() {
        assert_eq!(pax_time(Timestamp::new(1000, 0)), "1000");
        assert_eq!(pax_time(Timestamp::new(1, 500_000_000)), "1.5");
        assert_eq!(pax_time(Timestamp::new(-315619200, 0)), "-315619200");
        assert_eq!(pax_time(Timestamp::new(-2, 500_000_000)), "-1.5");
        assert_eq!(pax_time(Timestamp::new(-1, 250_000_000)), "-0.75");
    }

    #[test]
    fn pax_record_lengths() {
        let mut p = PaxRecords::default();
        p.push(b"uid", b"3000000");
        p.push(b"path", &[b'x'; 95]);
        assert!(p.data.starts_with(b"15 uid=3000000\n"));
        assert!(p.data[15..].starts_with(b"105 path="));
        assert_eq!(p.data.len(), 15 + 105);
    }

    #[test]
    fn base256() {
        let mut f = [0u8; 8];
        num_field(&mut f, 3_000_000, Format::Gnu, b"x", "uid_t").unwrap();
        assert_eq!(f, [0x80, 0, 0, 0, 0, 0x2d, 0xc6, 0xc0]);
        let mut t = [0u8; 12];
        num_field(&mut t, -315619200, Format::Gnu, b"x", "time_t").unwrap();
        assert_eq!(t, [0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xed, 0x30, 0x08, 0x80]);
        let e = num_field(&mut f, 3_000_000, Format::Ustar, b"x", "uid_t").unwrap_err();
        assert_eq!(e.to_string(), "x: value 3000000 out of uid_t range 0..2097151");
    }

    #[test]
    fn pax_names() {
        assert_eq!(pax_header_name(b"f", b"PaxHeaders"), b"./PaxHeaders/f");
        assert_eq!(pax_header_name(b"a/b/", b"PaxHeaders"), b"a/PaxHeaders/b");
    }
}
