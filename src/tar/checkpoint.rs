//! `--checkpoint` and `--checkpoint-action`: run actions every N records of
//! the (uncompressed) archive stream, like GNU tar's write checkpoints.

use std::io::{self, Write};
use std::time::Instant;

/// One `--checkpoint-action`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// `bell`: ring the terminal bell.
    Bell,
    /// `dot` or `.`: print a dot.
    Dot,
    /// `echo` / `echo=STRING`: print a message on stderr.
    Echo(Option<String>),
    /// `ttyout=STRING`: print on /dev/tty.
    TtyOut(String),
    /// `sleep=N`: sleep N seconds.
    Sleep(u64),
    /// `exec=COMMAND`: run COMMAND with `sh -c`.
    Exec(String),
    /// `totals`: print the bytes written so far.
    Totals,
}

impl Action {
    /// Parses one action as GNU tar spells it.
    pub fn parse(s: &str) -> Result<Self, String> {
        Ok(match s.split_once('=') {
            None => match s {
                "bell" => Action::Bell,
                "dot" | "." => Action::Dot,
                "echo" => Action::Echo(None),
                "totals" => Action::Totals,
                _ => return Err(format!("{s}: unknown checkpoint action")),
            },
            Some(("echo", m)) => Action::Echo(Some(m.to_string())),
            Some(("ttyout", m)) => Action::TtyOut(m.to_string()),
            Some(("sleep", n)) => Action::Sleep(n.parse().map_err(|_| format!("{n}: invalid sleep time"))?),
            Some(("exec", c)) => Action::Exec(c.to_string()),
            _ => return Err(format!("{s}: unknown checkpoint action")),
        })
    }
}

/// Counts records passing through and fires actions every `every` records.
pub struct Checkpoints<W: Write> {
    inner: W,
    every: u64,
    record: u64,
    bytes: u64,
    count: u64,
    actions: Vec<Action>,
    prog: String,
    start: Instant,
    /// Dots go where verbose output goes.
    dots_to_stderr: bool,
}

impl<W: Write> Checkpoints<W> {
    /// Wraps `inner`. `every == 0` disables checkpoints.
    pub fn new(inner: W, every: u64, record: u64, actions: Vec<Action>, prog: &str, dots_to_stderr: bool) -> Self {
        let actions = if actions.is_empty() { vec![Action::Echo(None)] } else { actions };
        Self {
            inner,
            every,
            record: record.max(512),
            bytes: 0,
            count: 0,
            actions,
            prog: prog.to_string(),
            start: Instant::now(),
            dots_to_stderr,
        }
    }

    /// Bytes written so far.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// When the run started (for rates).
    pub fn started(&self) -> Instant {
        self.start
    }

    /// The wrapped writer.
    pub fn into_inner(self) -> W {
        self.inner
    }

    fn fire(&mut self) {
        self.count += 1;
        if self.every == 0 || self.count % self.every != 0 {
            return;
        }
        let n = self.count;
        let expand = |m: &str| m.replace("%u", &n.to_string()).replace("%s", "write");
        for a in self.actions.clone() {
            match a {
                Action::Bell => {
                    let _ = io::stderr().write_all(b"\x07");
                }
                Action::Dot => {
                    if self.dots_to_stderr {
                        let _ = io::stderr().write_all(b".");
                    } else {
                        let mut o = io::stdout().lock();
                        let _ = o.write_all(b".");
                        let _ = o.flush();
                    }
                }
                Action::Echo(None) => eprintln!("{}: Write checkpoint {n}", self.prog),
                Action::Echo(Some(m)) => eprintln!("{}: {}", self.prog, expand(&m)),
                Action::TtyOut(m) => {
                    if let Ok(mut t) = std::fs::OpenOptions::new().write(true).open("/dev/tty") {
                        let _ = t.write_all(expand(&m).as_bytes());
                    }
                }
                Action::Sleep(s) => std::thread::sleep(std::time::Duration::from_secs(s)),
                Action::Exec(c) => {
                    let _ = std::process::Command::new("/bin/sh")
                        .arg("-c")
                        .arg(&c)
                        .env("TAR_CHECKPOINT", n.to_string())
                        .env("TAR_ARCHIVE", std::env::var_os("TAR_ARCHIVE").unwrap_or_default())
                        .status();
                }
                Action::Totals => eprintln!("{}", totals_line(self.bytes, self.start)),
            }
        }
    }
}

impl<W: Write> Write for Checkpoints<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.inner.write(buf)?;
        let before = self.bytes / self.record;
        self.bytes += n as u64;
        for _ in before..self.bytes / self.record {
            self.fire();
        }
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

/// GNU tar's `--totals` line: `Total bytes written: N (10KiB, 4.8MiB/s)`.
pub fn totals_line(bytes: u64, start: Instant) -> String {
    let secs = start.elapsed().as_secs_f64().max(1e-9);
    format!("Total bytes written: {bytes} ({}, {}/s)", human(bytes as f64), human(bytes as f64 / secs))
}

/// GNU's human-readable sizes with 1024 steps: `10KiB`, `4.8MiB`.
pub fn human(v: f64) -> String {
    const UNITS: [&str; 9] = ["B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB", "ZiB", "YiB"];
    let mut v = v;
    let mut u = 0;
    while v >= 1024.0 && u < UNITS.len() - 1 {
        v /= 1024.0;
        u += 1;
    }
    if u == 0 {
        format!("{}{}", v.ceil() as u64, UNITS[u])
    } else if v < 10.0 {
        let r = (v * 10.0).ceil() / 10.0;
        if r >= 10.0 { format!("{}{}", r as u64, UNITS[u]) } else { format!("{r:.1}{}", UNITS[u]) }
    } else {
        format!("{}{}", v.ceil() as u64, UNITS[u])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn human_sizes_like_gnu() {
        assert_eq!(human(10240.0), "10KiB");
        assert_eq!(human(512.0), "512B");
        assert_eq!(human(1.5 * 1048576.0), "1.5MiB");
    }

    #[test]
    fn fires_every_n_records() {
        let mut c = Checkpoints::new(Vec::new(), 2, 512, vec![Action::Sleep(0)], "tar", true);
        c.write_all(&[0u8; 512 * 5]).unwrap();
        assert_eq!(c.count, 5);
        assert_eq!(Action::parse("echo=hi %u").unwrap(), Action::Echo(Some("hi %u".into())));
        assert!(Action::parse("bogus").is_err());
    }
}
