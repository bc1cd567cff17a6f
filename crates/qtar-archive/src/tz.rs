//! Local time for `tar -tv` listings: a small TZif reader (RFC 8536) for the
//! zone named by `TZ` or `/etc/localtime`, like glibc's `localtime`.
//!
//! Limits: times after a zone's last transition use that transition's offset
//! (the POSIX-TZ footer rule is not evaluated; Debian's "fat" zone files have
//! transitions up to 2037); a `TZ` that is neither a zone file nor `UTC`/`GMT`
//! with an optional plain offset (`EST5`) is treated as UTC.

use std::path::{Path, PathBuf};

/// A time zone: UTC offsets by transition time.
#[derive(Clone, Debug, Default)]
pub(crate) struct Zone {
    /// (transition time, UTC offset in seconds from then on), sorted.
    transitions: Vec<(i64, i64)>,
    /// Offset before the first transition (or always, without transitions).
    initial: i64,
}

impl Zone {
    /// Seconds to add to a UTC time to get local time.
    pub fn offset(&self, t: i64) -> i64 {
        match self.transitions.partition_point(|&(at, _)| at <= t) {
            0 => self.initial,
            i => self.transitions[i - 1].1,
        }
    }

    /// The zone of `TZ` (when `tz` is `None`: the process's `TZ` variable,
    /// else `/etc/localtime`).
    pub fn load(tz: Option<&str>) -> Zone {
        let env = std::env::var("TZ").ok();
        let tz = tz.map(str::to_string).or(env);
        match tz.as_deref() {
            None => parse_file(Path::new("/etc/localtime")).unwrap_or_default(),
            Some(s) => {
                let s = s.strip_prefix(':').unwrap_or(s);
                let path = if s.starts_with('/') { PathBuf::from(s) } else { Path::new("/usr/share/zoneinfo").join(s) };
                if !s.is_empty() && !s.contains("..") {
                    if let Some(z) = parse_file(&path) {
                        return z;
                    }
                }
                posix_fixed(s)
            }
        }
    }
}

/// `UTC`, `GMT0`, `EST5`, `XXX-3`: a fixed offset (POSIX sign: west positive).
fn posix_fixed(s: &str) -> Zone {
    let name_len = s.bytes().take_while(|c| c.is_ascii_alphabetic()).count();
    let rest = &s[name_len..];
    let end = rest.bytes().take_while(|c| c.is_ascii_digit() || *c == b'+' || *c == b'-' || *c == b':').count();
    let num = &rest[..end];
    let (sign, num) = match num.strip_prefix('-') {
        Some(n) => (1, n),
        None => (-1, num.strip_prefix('+').unwrap_or(num)),
    };
    let mut parts = num.split(':').map(|p| p.parse::<i64>().unwrap_or(0));
    let h = parts.next().unwrap_or(0);
    let m = parts.next().unwrap_or(0);
    let sec = parts.next().unwrap_or(0);
    Zone { transitions: Vec::new(), initial: sign * (h * 3600 + m * 60 + sec) }
}

fn be32(b: &[u8]) -> i64 {
    i64::from(i32::from_be_bytes([b[0], b[1], b[2], b[3]]))
}

fn parse_file(path: &Path) -> Option<Zone> {
    let data = std::fs::read(path).ok()?;
    parse(&data)
}

/// Parses TZif data, preferring the 64-bit (v2+) block.
pub(crate) fn parse(data: &[u8]) -> Option<Zone> {
    let header = |d: &[u8]| -> Option<[usize; 6]> {
        if d.len() < 44 || &d[..4] != b"TZif" {
            return None;
        }
        let mut c = [0usize; 6];
        for (i, v) in c.iter_mut().enumerate() {
            *v = be32(&d[20 + 4 * i..]) as usize;
        }
        Some(c)
    };
    let [isut, isstd, leap, timecnt, typecnt, charcnt] = header(data)?;
    let v1_len = 44 + timecnt * 5 + typecnt * 6 + charcnt + leap * 8 + isstd + isut;
    let (d, tsize, counts) = if data[4] >= b'2' && data.len() > v1_len {
        let d = &data[v1_len..];
        (d, 8, header(d)?)
    } else {
        (data, 4, [isut, isstd, leap, timecnt, typecnt, charcnt])
    };
    let [_, _, _, timecnt, typecnt, _] = counts;
    let times = d.get(44..44 + timecnt * tsize)?;
    let idx = d.get(44 + timecnt * tsize..44 + timecnt * (tsize + 1))?;
    let types = d.get(44 + timecnt * (tsize + 1)..44 + timecnt * (tsize + 1) + typecnt * 6)?;
    if typecnt == 0 {
        return None;
    }
    let off = |i: usize| be32(&types[6 * i..]);
    let mut transitions = Vec::with_capacity(timecnt);
    for i in 0..timecnt {
        let t = if tsize == 8 {
            i64::from_be_bytes(times[8 * i..8 * i + 8].try_into().ok()?)
        } else {
            be32(&times[4 * i..])
        };
        let ty = usize::from(idx[i]);
        if ty >= typecnt {
            return None;
        }
        transitions.push((t, off(ty)));
    }
    Some(Zone { transitions, initial: off(0) })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fixed_offsets() {
        assert_eq!(posix_fixed("UTC").offset(0), 0);
        assert_eq!(posix_fixed("EST5").offset(0), -5 * 3600);
        assert_eq!(posix_fixed("XXX-5:30").offset(0), 5 * 3600 + 1800);
    }

    #[test]
    fn berlin_if_installed() {
        let Some(z) = parse_file(Path::new("/usr/share/zoneinfo/Europe/Berlin")) else {
            eprintln!("SKIP: tzdata not installed");
            return;
        };
        assert_eq!(z.offset(1704164645), 3600); // January 2024: CET
        assert_eq!(z.offset(1719792000), 7200); // July 2024: CEST
    }
}
