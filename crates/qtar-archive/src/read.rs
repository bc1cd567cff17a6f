//! Reading archives: a block-level parser for every format this crate
//! writes (plus ustar prefixes, pax sparse 0.1/1.0, old GNU sparse), and
//! `tar -t`/`tar -tv` listing.

use std::collections::HashMap;
use std::io::{self, Read, Write};

use crate::error::ArchiveError;
use crate::meta::Timestamp;
use crate::sparse::Region;
use crate::write::BLOCK;

/// One member as read from an archive (long names and pax records applied).
#[derive(Clone, Debug)]
pub(crate) struct Entry {
    pub name: Vec<u8>,
    pub link: Vec<u8>,
    pub typeflag: u8,
    pub mode: u32,
    pub uid: u64,
    pub gid: u64,
    pub uname: Vec<u8>,
    pub gname: Vec<u8>,
    /// Real size (for sparse members: the file's size).
    pub size: u64,
    pub mtime: Timestamp,
    pub atime: Option<Timestamp>,
    pub devmajor: u32,
    pub devminor: u32,
    pub xattrs: Vec<(Vec<u8>, Vec<u8>)>,
    /// Data regions of a sparse member (map already consumed).
    pub sparse: Option<Vec<Region>>,
    /// pax sparse 1.0: map is at the start of the data, not yet read.
    pax_sparse_1: bool,
    /// Bytes of data stored in the archive for this member.
    pub stored: u64,
    pub is_v7: bool,
}

/// Streaming parser over a tar stream.
pub(crate) struct Reader<R: Read> {
    r: R,
    pub offset: u64,
    /// Warnings like GNU's "A lone zero block at N".
    pub warnings: Vec<String>,
    remaining: u64,
}

fn parse_num(field: &[u8]) -> Option<i128> {
    if field.is_empty() {
        return Some(0);
    }
    if field[0] & 0x80 != 0 {
        // base-256, two's complement when the sign bit (0x40) is set.
        let neg = field[0] & 0x40 != 0;
        let mut v: i128 = if neg { -1 } else { 0 };
        for (i, &b) in field.iter().enumerate() {
            let b = if i == 0 && !neg { b & 0x7f } else { b };
            v = (v << 8) | i128::from(b);
        }
        return Some(v);
    }
    let s: Vec<u8> = field.iter().copied().skip_while(|&c| c == b' ').take_while(|&c| c != 0 && c != b' ').collect();
    if s.is_empty() {
        return Some(0);
    }
    let s = std::str::from_utf8(&s).ok()?;
    i128::from_str_radix(s, 8).ok()
}

fn cstr(field: &[u8]) -> Vec<u8> {
    let end = field.iter().position(|&c| c == 0).unwrap_or(field.len());
    field[..end].to_vec()
}

pub(crate) fn parse_pax_time(v: &[u8]) -> Option<Timestamp> {
    let s = std::str::from_utf8(v).ok()?;
    let (neg, s) = match s.strip_prefix('-') {
        Some(r) => (true, r),
        None => (false, s),
    };
    let (whole, frac) = s.split_once('.').unwrap_or((s, ""));
    let whole: i64 = whole.parse().ok()?;
    let mut ns: u32 = 0;
    for (i, c) in frac.bytes().take(9).enumerate() {
        if !c.is_ascii_digit() {
            return None;
        }
        ns += u32::from(c - b'0') * 10u32.pow(8 - i as u32);
    }
    Some(if !neg {
        Timestamp::new(whole, ns)
    } else if ns == 0 {
        Timestamp::new(-whole, 0)
    } else {
        Timestamp::new(-whole - 1, 1_000_000_000 - ns)
    })
}

type Records = Vec<(Vec<u8>, Vec<u8>)>;

fn parse_pax(data: &[u8], offset: u64) -> Result<Records, ArchiveError> {
    let mut out = Vec::new();
    for ext in tar::PaxExtensions::new(data) {
        let ext =
            ext.map_err(|e| ArchiveError::Corrupt { offset, reason: format!("malformed extended header: {e}") })?;
        out.push((ext.key_bytes().to_vec(), ext.value_bytes().to_vec()));
    }
    Ok(out)
}

fn decode_xattr_key(k: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(k.len());
    let mut i = 0;
    while i < k.len() {
        if k[i] == b'%' && i + 2 < k.len() {
            match &k[i + 1..i + 3] {
                b"25" => {
                    out.push(b'%');
                    i += 3;
                    continue;
                }
                b"3D" => {
                    out.push(b'=');
                    i += 3;
                    continue;
                }
                _ => {}
            }
        }
        out.push(k[i]);
        i += 1;
    }
    out
}

impl<R: Read> Reader<R> {
    pub fn new(r: R) -> Self {
        Reader { r, offset: 0, warnings: Vec::new(), remaining: 0 }
    }

    fn read_block(&mut self, buf: &mut [u8; BLOCK]) -> Result<bool, ArchiveError> {
        let mut got = 0;
        while got < BLOCK {
            match self.r.read(&mut buf[got..]) {
                Ok(0) => break,
                Ok(n) => got += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(ArchiveError::io(b"archive", "read error", e)),
            }
        }
        if got == 0 {
            return Ok(false);
        }
        if got < BLOCK {
            return Err(ArchiveError::Corrupt { offset: self.offset, reason: "Unexpected EOF in archive".into() });
        }
        self.offset += BLOCK as u64;
        Ok(true)
    }

    fn read_data_vec(&mut self, size: u64) -> Result<Vec<u8>, ArchiveError> {
        let mut v = Vec::with_capacity(size.min(1 << 20) as usize);
        let mut b = [0u8; BLOCK];
        let mut left = size;
        while left > 0 {
            if !self.read_block(&mut b)? {
                return Err(ArchiveError::Corrupt { offset: self.offset, reason: "Unexpected EOF in archive".into() });
            }
            let n = left.min(BLOCK as u64) as usize;
            v.extend_from_slice(&b[..n]);
            left -= n as u64;
        }
        Ok(v)
    }

    /// Skips whatever is left of the current member's data.
    pub fn skip_data(&mut self) -> Result<(), ArchiveError> {
        let mut sink = |_: &[u8]| Ok(());
        self.read_data(&mut sink)
    }

    /// Streams the rest of the current member's stored data (block padding
    /// removed) to `sink`.
    pub fn read_data(&mut self, sink: &mut dyn FnMut(&[u8]) -> Result<(), ArchiveError>) -> Result<(), ArchiveError> {
        let mut b = [0u8; BLOCK];
        while self.remaining > 0 {
            if !self.read_block(&mut b)? {
                return Err(ArchiveError::Corrupt { offset: self.offset, reason: "Unexpected EOF in archive".into() });
            }
            let n = self.remaining.min(BLOCK as u64) as usize;
            self.remaining -= n as u64;
            sink(&b[..n])?;
        }
        Ok(())
    }

    /// Reads the next member header, or `None` at the end of the archive.
    pub fn next_entry(&mut self) -> Result<Option<Entry>, ArchiveError> {
        self.skip_data()?;
        let mut long_name: Option<Vec<u8>> = None;
        let mut long_link: Option<Vec<u8>> = None;
        let mut pax: Vec<(Vec<u8>, Vec<u8>)> = Vec::new();
        let mut global: HashMap<Vec<u8>, Vec<u8>> = HashMap::new();
        let mut b = [0u8; BLOCK];
        loop {
            let start = self.offset;
            if !self.read_block(&mut b)? {
                return Ok(None);
            }
            if b.iter().all(|&c| c == 0) {
                // End of archive: GNU accepts one or two zero blocks.
                let mut b2 = [0u8; BLOCK];
                if !self.read_block(&mut b2)? || b2.iter().any(|&c| c != 0) {
                    self.warnings.push(format!("A lone zero block at {}", start / BLOCK as u64 + 1));
                }
                return Ok(None);
            }
            let stored_ck = parse_num(&b[148..156]).unwrap_or(-1);
            let mut unsigned: i128 = 0;
            let mut signed: i128 = 0;
            for (i, &c) in b.iter().enumerate() {
                let c = if (148..156).contains(&i) { b' ' } else { c };
                unsigned += i128::from(c);
                signed += i128::from(c as i8);
            }
            if stored_ck != unsigned && stored_ck != signed {
                return Err(ArchiveError::Corrupt {
                    offset: start,
                    reason: if start == 0 {
                        "This does not look like a tar archive".into()
                    } else {
                        "Skipping to next header: checksum mismatch".into()
                    },
                });
            }
            let typeflag = b[156];
            let size_field = parse_num(&b[124..136]).unwrap_or(0).max(0) as u64;
            match typeflag {
                b'L' | b'K' => {
                    let mut v = self.read_data_vec(size_field)?;
                    if let Some(p) = v.iter().position(|&c| c == 0) {
                        v.truncate(p);
                    }
                    if typeflag == b'L' {
                        long_name = Some(v)
                    } else {
                        long_link = Some(v)
                    }
                    continue;
                }
                b'x' | b'X' => {
                    let v = self.read_data_vec(size_field)?;
                    pax.extend(parse_pax(&v, start)?);
                    continue;
                }
                b'g' => {
                    let v = self.read_data_vec(size_field)?;
                    global.extend(parse_pax(&v, start)?);
                    continue;
                }
                _ => {}
            }
            let magic = &b[257..265];
            let is_ustar = &magic[..6] == b"ustar\0";
            let is_gnu = magic == b"ustar  \0";
            let is_v7 = !is_ustar && !is_gnu;
            let mut name = cstr(&b[0..100]);
            if is_ustar && b[345] != 0 {
                let mut p = cstr(&b[345..500]);
                p.push(b'/');
                p.extend_from_slice(&name);
                name = p;
            }
            if let Some(n) = long_name.take() {
                name = n;
            }
            let mut link = cstr(&b[157..257]);
            if let Some(l) = long_link.take() {
                link = l;
            }
            let num = |r: std::ops::Range<usize>| parse_num(&b[r]).unwrap_or(0);
            let mut e = Entry {
                name,
                link,
                typeflag,
                mode: (num(100..108) & 0o7777) as u32,
                uid: num(108..116).max(0) as u64,
                gid: num(116..124).max(0) as u64,
                uname: if is_v7 { Vec::new() } else { cstr(&b[265..297]) },
                gname: if is_v7 { Vec::new() } else { cstr(&b[297..329]) },
                size: size_field,
                mtime: Timestamp::new(num(136..148) as i64, 0),
                atime: None,
                devmajor: if is_v7 { 0 } else { num(329..337) as u32 },
                devminor: if is_v7 { 0 } else { num(337..345) as u32 },
                xattrs: Vec::new(),
                sparse: None,
                pax_sparse_1: false,
                stored: size_field,
                is_v7,
            };
            if matches!(typeflag, b'1' | b'2' | b'3' | b'4' | b'5' | b'6') {
                e.stored = 0;
            }
            if typeflag == b'S' && is_gnu {
                let mut map = Vec::new();
                for i in 0..4 {
                    let o = 386 + 24 * i;
                    let off = num(o..o + 12);
                    let len = num(o + 12..o + 24);
                    if off == 0 && len == 0 && b[o] == 0 {
                        break;
                    }
                    map.push(Region { offset: off as u64, len: len as u64 });
                }
                let mut ext = b[482] != 0;
                while ext {
                    let mut x = [0u8; BLOCK];
                    if !self.read_block(&mut x)? {
                        return Err(ArchiveError::Corrupt {
                            offset: self.offset,
                            reason: "Unexpected EOF in archive".into(),
                        });
                    }
                    for i in 0..21 {
                        let o = 24 * i;
                        if x[o] == 0 {
                            break;
                        }
                        let off = parse_num(&x[o..o + 12]).unwrap_or(0) as u64;
                        let len = parse_num(&x[o + 12..o + 24]).unwrap_or(0) as u64;
                        map.push(Region { offset: off, len });
                    }
                    ext = x[504] != 0;
                }
                e.size = num(483..495).max(0) as u64;
                e.sparse = Some(map);
            }
            let mut sparse_major = None;
            let mut sparse_map01: Option<Vec<u8>> = None;
            for (k, v) in global.iter().chain(pax.iter().map(|(k, v)| (k, v))) {
                let vs = || std::str::from_utf8(v).ok().and_then(|s| s.parse::<u64>().ok());
                match k.as_slice() {
                    b"path" => e.name = v.clone(),
                    b"linkpath" => e.link = v.clone(),
                    b"uid" => e.uid = vs().unwrap_or(e.uid),
                    b"gid" => e.gid = vs().unwrap_or(e.gid),
                    b"uname" => e.uname = v.clone(),
                    b"gname" => e.gname = v.clone(),
                    b"size" => {
                        e.size = vs().unwrap_or(e.size);
                        e.stored = e.size;
                    }
                    b"mtime" => e.mtime = parse_pax_time(v).unwrap_or(e.mtime),
                    b"atime" => e.atime = parse_pax_time(v),
                    b"devmajor" => e.devmajor = vs().unwrap_or(0) as u32,
                    b"devminor" => e.devminor = vs().unwrap_or(0) as u32,
                    b"GNU.sparse.major" => sparse_major = vs(),
                    b"GNU.sparse.name" => e.name = v.clone(),
                    b"GNU.sparse.realsize" | b"GNU.sparse.size" => {
                        if let Some(s) = vs() {
                            e.size = s;
                        }
                    }
                    b"GNU.sparse.map" => sparse_map01 = Some(v.clone()),
                    _ => {
                        if let Some(x) = k.strip_prefix(b"SCHILY.xattr.") {
                            e.xattrs.push((decode_xattr_key(x), v.clone()));
                        }
                    }
                }
            }
            if sparse_major == Some(1) {
                e.pax_sparse_1 = true;
            } else if let Some(m) = sparse_map01 {
                let nums: Vec<u64> =
                    m.split(|&c| c == b',').filter_map(|s| std::str::from_utf8(s).ok()?.parse().ok()).collect();
                e.sparse =
                    Some(nums.chunks(2).filter(|c| c.len() == 2).map(|c| Region { offset: c[0], len: c[1] }).collect());
            }
            self.remaining = e.stored;
            if e.pax_sparse_1 {
                self.read_pax_sparse_map(&mut e)?;
            }
            return Ok(Some(e));
        }
    }

    /// Reads the decimal sparse map that starts the data of a pax sparse 1.0 member.
    fn read_pax_sparse_map(&mut self, e: &mut Entry) -> Result<(), ArchiveError> {
        let start = self.offset;
        let mut text = Vec::new();
        let mut nums: Vec<u64> = Vec::new();
        let mut need: Option<u64> = None;
        let mut b = [0u8; BLOCK];
        let mut cur = Vec::new();
        loop {
            if need.is_some_and(|n| nums.len() as u64 > 2 * n) {
                break;
            }
            if self.remaining == 0 || !self.read_block(&mut b)? {
                return Err(ArchiveError::Corrupt { offset: start, reason: "malformed sparse map".into() });
            }
            self.remaining = self.remaining.saturating_sub(BLOCK as u64);
            text.extend_from_slice(&b);
            for &c in b.iter() {
                if need.is_some_and(|n| nums.len() as u64 > 2 * n) {
                    break;
                }
                if c == b'\n' {
                    let s = std::str::from_utf8(&cur).ok().and_then(|s| s.parse::<u64>().ok()).ok_or_else(|| {
                        ArchiveError::Corrupt { offset: start, reason: "malformed sparse map".into() }
                    })?;
                    nums.push(s);
                    if nums.len() == 1 {
                        need = Some(s);
                    }
                    cur.clear();
                } else {
                    cur.push(c);
                }
            }
        }
        e.sparse = Some(nums[1..].chunks(2).map(|c| Region { offset: c[0], len: c[1] }).collect());
        e.stored = self.remaining;
        Ok(())
    }
}

/// GNU's default "escape" quoting of names in the C locale.
pub(crate) fn quote(name: &[u8]) -> String {
    let mut s = String::new();
    for &c in name {
        match c {
            b'\\' => s.push_str("\\\\"),
            b'\n' => s.push_str("\\n"),
            b'\t' => s.push_str("\\t"),
            b'\r' => s.push_str("\\r"),
            0x07 => s.push_str("\\a"),
            0x08 => s.push_str("\\b"),
            0x0c => s.push_str("\\f"),
            0x0b => s.push_str("\\v"),
            0x20..=0x7e => s.push(c as char),
            _ => s.push_str(&format!("\\{c:03o}")),
        }
    }
    s
}

fn mode_string(typeflag: u8, mode: u32, trailing_slash: bool) -> String {
    let t = match typeflag {
        b'S' | b'0' | 0 | b'7' => {
            if trailing_slash {
                'd'
            } else {
                '-'
            }
        }
        b'1' => 'h',
        b'5' | b'D' => 'd',
        b'2' => 'l',
        b'4' => 'b',
        b'3' => 'c',
        b'6' => 'p',
        b'V' => 'V',
        b'M' => 'M',
        _ => '?',
    };
    let mut s = String::from(t);
    let bit = |m: u32, c: char| if mode & m != 0 { c } else { '-' };
    s.push(bit(0o400, 'r'));
    s.push(bit(0o200, 'w'));
    s.push(match (mode & 0o100 != 0, mode & 0o4000 != 0) {
        (true, true) => 's',
        (false, true) => 'S',
        (true, false) => 'x',
        _ => '-',
    });
    s.push(bit(0o040, 'r'));
    s.push(bit(0o020, 'w'));
    s.push(match (mode & 0o010 != 0, mode & 0o2000 != 0) {
        (true, true) => 's',
        (false, true) => 'S',
        (true, false) => 'x',
        _ => '-',
    });
    s.push(bit(0o004, 'r'));
    s.push(bit(0o002, 'w'));
    s.push(match (mode & 0o001 != 0, mode & 0o1000 != 0) {
        (true, true) => 't',
        (false, true) => 'T',
        (true, false) => 'x',
        _ => '-',
    });
    s
}

/// `YYYY-MM-DD HH:MM` in UTC (days-from-civil inverse, valid for any i64 day).
pub(crate) fn utc_minutes(sec: i64) -> String {
    let days = sec.div_euclid(86400);
    let rem = sec.rem_euclid(86400);
    let z = days + 719468;
    let era = z.div_euclid(146097);
    let doe = z - era * 146097;
    let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = if m <= 2 { y + 1 } else { y };
    format!("{y:04}-{m:02}-{d:02} {:02}:{:02}", rem / 3600, rem % 3600 / 60)
}

/// Lists an archive like GNU tar 1.34 `-t` (`verbose == 0`) or `-tv`
/// (`verbose >= 1`), writing the lines to `out`.
///
/// Names are quoted with GNU's default `escape` style for the C locale
/// (non-ASCII bytes as `\ooo`). Times are local times of the zone in `TZ`
/// (or `/etc/localtime`), see [`list_in_zone`]. `numeric_owner` prints
/// uid/gid numbers instead of names. Returns the warnings GNU would print on
/// stderr (e.g. "A lone zero block at N").
pub fn list<R: Read>(
    input: R,
    verbose: u8,
    numeric_owner: bool,
    out: &mut impl Write,
) -> Result<Vec<String>, ArchiveError> {
    list_in_zone(input, verbose, numeric_owner, None, out)
}

/// [`list`] with an explicit time zone: `tz` is a `TZ` value such as `UTC`
/// or `Europe/Berlin` (zone files from /usr/share/zoneinfo); `None` uses the
/// process's `TZ` or `/etc/localtime`.
pub fn list_in_zone<R: Read>(
    input: R,
    verbose: u8,
    numeric_owner: bool,
    tz: Option<&str>,
    out: &mut impl Write,
) -> Result<Vec<String>, ArchiveError> {
    let zone = crate::tz::Zone::load(tz);
    let mut rd = Reader::new(input);
    let mut ugswidth = 18usize;
    let datewidth = 16usize;
    let w = |out: &mut dyn Write, s: &str| {
        out.write_all(s.as_bytes()).map_err(|e| ArchiveError::io(b"stdout", "write error", e))
    };
    while let Some(e) = rd.next_entry()? {
        if verbose == 0 {
            w(out, &format!("{}\n", quote(&e.name)))?;
            continue;
        }
        let modes = mode_string(e.typeflag, e.mode, e.name.ends_with(b"/"));
        let user = if !e.uname.is_empty() && !e.is_v7 && !numeric_owner {
            String::from_utf8_lossy(&e.uname).into_owned()
        } else {
            e.uid.to_string()
        };
        let group = if !e.gname.is_empty() && !e.is_v7 && !numeric_owner {
            String::from_utf8_lossy(&e.gname).into_owned()
        } else {
            e.gid.to_string()
        };
        let size = match e.typeflag {
            b'3' | b'4' => format!("{},{}", e.devmajor, e.devminor),
            _ => e.size.to_string(),
        };
        let pad = user.len() + 1 + group.len() + size.len();
        ugswidth = ugswidth.max(pad);
        // GNU's tartime() shows a negative time with a fraction rounded toward
        // zero: -0.5 lists as 1970-01-01 00:00.
        let shown = if e.mtime.sec < 0 && e.mtime.nsec != 0 { e.mtime.sec + 1 } else { e.mtime.sec };
        let ts = utc_minutes(shown.saturating_add(zone.offset(shown)));
        let mut line = format!(
            "{modes} {user}/{group} {size:>sw$} {ts:<dw$} {}",
            quote(&e.name),
            sw = ugswidth - pad + size.len(),
            dw = datewidth
        );
        match e.typeflag {
            b'2' => line.push_str(&format!(" -> {}\n", quote(&e.link))),
            b'1' => line.push_str(&format!(" link to {}\n", quote(&e.link))),
            b'0' | 0 | b'S' | b'3' | b'4' | b'5' | b'6' | b'7' | b'D' => line.push('\n'),
            t => line.push_str(&format!(" unknown file type '{}'\n", t as char)),
        }
        w(out, &line)?;
    }
    Ok(rd.warnings)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates() {
        assert_eq!(utc_minutes(0), "1970-01-01 00:00");
        assert_eq!(utc_minutes(1704164645), "2024-01-02 03:04");
        assert_eq!(utc_minutes(-315619200), "1960-01-01 00:00");
    }

    #[test]
    fn pax_times_parse() {
        assert_eq!(parse_pax_time(b"-1.5"), Some(Timestamp::new(-2, 500_000_000)));
        assert_eq!(parse_pax_time(b"12.000000001"), Some(Timestamp::new(12, 1)));
    }

    #[test]
    fn negative_base256() {
        let f = [0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xed, 0x30, 0x08, 0x80];
        assert_eq!(parse_num(&f), Some(-315619200));
        assert_eq!(parse_num(&[0x80, 0, 0, 0, 0, 0x2d, 0xc6, 0xc0]), Some(3_000_000));
        assert_eq!(parse_num(b"0000644\0"), Some(0o644));
    }
}
