//! Parser for the text that tracefs prints for `block_rq_issue` and
//! `block_rq_complete` events.
//!
//! A line looks like this (kernel 6.x, with the ioprio field):
//!
//! ```text
//! tar-8107 [001] ..... 554.891910: block_rq_issue: 7,0 RA 131072 () 4194568 + 256 be,0,4 [tar]
//! ```
//!
//! Older kernels print no ioprio field, and `block_rq_complete` prints no
//! byte count and ends with `[error]` instead of `[comm]`. All of these
//! variants are accepted. Header lines (starting with `#`) and lines of other
//! events are skipped by [`parse_trace`].

use std::fmt;

/// Which tracepoint produced a [`Request`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EventKind {
    /// `block:block_rq_issue`: the request was handed to the driver.
    Issue,
    /// `block:block_rq_complete`: the driver finished the request.
    Complete,
}

/// One block request as printed by tracefs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    /// Which event this line came from.
    pub kind: EventKind,
    /// Name of the task that was running when the event fired (left of `-pid`).
    pub task: String,
    /// Pid of that task.
    pub pid: u32,
    /// CPU the event fired on.
    pub cpu: u32,
    /// Trace clock time in nanoseconds.
    pub time_ns: u64,
    /// Device as (major, minor).
    pub dev: (u32, u32),
    /// The rwbs flags, e.g. `RA` (read-ahead), `RS` (sync read), `WS`, `FWS`.
    pub rwbs: String,
    /// Bytes in the request (only `block_rq_issue` prints it).
    pub bytes: Option<u64>,
    /// First 512-byte sector of the request.
    pub sector: u64,
    /// Length in 512-byte sectors.
    pub sectors: u64,
    /// The ioprio triple `class,level,hint` text if the kernel printed it.
    pub ioprio: Option<String>,
    /// For issue events, the `[comm]` of the issuing task; for complete
    /// events, the text in brackets (the error code).
    pub comm: String,
}

impl Request {
    /// True for reads (`R` in rwbs, excluding flushes with no data).
    pub fn is_read(&self) -> bool {
        self.rwbs.contains('R')
    }
    /// True for writes (`W` in rwbs).
    pub fn is_write(&self) -> bool {
        self.rwbs.contains('W')
    }
    /// First sector after the request.
    pub fn end(&self) -> u64 {
        self.sector + self.sectors
    }
}

/// Why a trace line could not be parsed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct ParseError {
    /// 1-based line number (0 when parsing a single line).
    pub line_no: usize,
    /// What was wrong.
    pub reason: &'static str,
    /// The offending line.
    pub line: String,
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "trace line {}: {}: {:?}", self.line_no, self.reason, self.line)
    }
}

const ISSUE: &str = ": block_rq_issue: ";
const COMPLETE: &str = ": block_rq_complete: ";

/// Parses one line. Returns `Ok(None)` for lines that are not
/// `block_rq_issue`/`block_rq_complete` events (headers, other events, blank
/// lines, `CPU:N [LOST n EVENTS]` markers are an error: see below).
///
/// A `[LOST N EVENTS]` marker makes this return an error, because a trace
/// with lost events cannot be priced honestly.
pub fn parse_line(line: &str) -> Result<Option<Request>, ParseError> {
    let err = |reason| ParseError { line_no: 0, reason, line: line.to_string() };
    let trimmed = line.trim_end();
    if trimmed.contains("LOST") && trimmed.contains("EVENTS") {
        return Err(err("the ring buffer lost events"));
    }
    if trimmed.trim_start().starts_with('#') || trimmed.trim().is_empty() {
        return Ok(None);
    }
    let (kind, pos, marker) = if let Some(p) = trimmed.find(ISSUE) {
        (EventKind::Issue, p, ISSUE)
    } else if let Some(p) = trimmed.find(COMPLETE) {
        (EventKind::Complete, p, COMPLETE)
    } else {
        return Ok(None);
    };
    let head = &trimmed[..pos];
    let body = &trimmed[pos + marker.len()..];

    // Head: "<task>-<pid> [cpu] <flags> <secs>.<usecs>" (flags may be absent).
    let head = head.trim_start();
    let lb = head.rfind(" [").ok_or_else(|| err("no [cpu] field"))?;
    let task_pid = head[..lb].trim_end();
    let dash = task_pid.rfind('-').ok_or_else(|| err("no task-pid"))?;
    let task = task_pid[..dash].to_string();
    let pid: u32 = task_pid[dash + 1..].parse().map_err(|_| err("bad pid"))?;
    let rest = &head[lb + 2..];
    let rb = rest.find(']').ok_or_else(|| err("unterminated [cpu]"))?;
    let cpu: u32 = rest[..rb].trim().parse().map_err(|_| err("bad cpu"))?;
    let ts = rest[rb + 1..].split_whitespace().last().ok_or_else(|| err("no timestamp"))?;
    let time_ns = parse_timestamp(ts).ok_or_else(|| err("bad timestamp"))?;

    // Body: "maj,min rwbs [bytes] (cmd) sector + sectors [ioprio] [comm]".
    let open = body.find(" (").ok_or_else(|| err("no (cmd) field"))?;
    let close = body[open..].find(')').map(|c| c + open).ok_or_else(|| err("unterminated (cmd)"))?;
    let mut pre = body[..open].split_whitespace();
    let devs = pre.next().ok_or_else(|| err("no device"))?;
    let (maj, min) = devs.split_once(',').ok_or_else(|| err("bad device"))?;
    let dev = (maj.parse().map_err(|_| err("bad major"))?, min.parse().map_err(|_| err("bad minor"))?);
    let rwbs = pre.next().ok_or_else(|| err("no rwbs"))?.to_string();
    let bytes = match pre.next() {
        Some(b) => Some(b.parse().map_err(|_| err("bad byte count"))?),
        None => None,
    };
    if pre.next().is_some() {
        return Err(err("unexpected field before (cmd)"));
    }
    let post = &body[close + 1..];
    let cb = post.rfind('[').ok_or_else(|| err("no [comm] field"))?;
    let comm_end = post.rfind(']').ok_or_else(|| err("unterminated [comm]"))?;
    if comm_end < cb {
        return Err(err("unterminated [comm]"));
    }
    let comm = post[cb + 1..comm_end].to_string();
    let mut f = post[..cb].split_whitespace();
    let sector: u64 = f.next().ok_or_else(|| err("no sector"))?.parse().map_err(|_| err("bad sector"))?;
    if f.next() != Some("+") {
        return Err(err("no '+' between sector and length"));
    }
    let sectors: u64 = f.next().ok_or_else(|| err("no length"))?.parse().map_err(|_| err("bad length"))?;
    let ioprio = f.next().map(str::to_string);
    if f.next().is_some() {
        return Err(err("unexpected field after ioprio"));
    }
    Ok(Some(Request { kind, task, pid, cpu, time_ns, dev, rwbs, bytes, sector, sectors, ioprio, comm }))
}

fn parse_timestamp(ts: &str) -> Option<u64> {
    let ts = ts.strip_suffix(':').unwrap_or(ts);
    let (s, frac) = ts.split_once('.').unwrap_or((ts, ""));
    if frac.len() > 9 || !frac.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let secs: u64 = s.parse().ok()?;
    let mut ns: u64 = if frac.is_empty() { 0 } else { frac.parse().ok()? };
    for _ in frac.len()..9 {
        ns *= 10;
    }
    secs.checked_mul(1_000_000_000)?.checked_add(ns)
}

/// Parses a whole trace text, keeping block request events in the order
/// they appear (which is time order within an instance's `trace` file).
pub fn parse_trace(text: &str) -> Result<Vec<Request>, ParseError> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        match parse_line(line) {
            Ok(Some(r)) => out.push(r),
            Ok(None) => {}
            Err(mut e) => {
                e.line_no = i + 1;
                return Err(e);
            }
        }
    }
    Ok(out)
}

/// The issue events of a trace, sorted by time (stable), as the disk model
/// wants them.
pub fn issues(reqs: &[Request]) -> Vec<Request> {
    let mut v: Vec<Request> = reqs.iter().filter(|r| r.kind == EventKind::Issue).cloned().collect();
    v.sort_by_key(|r| r.time_ns);
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    // Real lines captured on this machine (kernel 6.18, loop device 7,0).
    const REAL: &str = "\
# tracer: nop
#
# entries-in-buffer/entries-written: 22/22   #P:2
#           TASK-PID     CPU#  |||||  TIMESTAMP  FUNCTION
#              | |         |   |||||     |         |
             cat-5411    [001] .....  6370.329216: block_rq_issue: 7,0 RM 1024 () 8742 + 2 be,0,4 [cat]
     ksoftirqd/1-22      [001] ..s..  6370.329334: block_rq_complete: 7,0 RM () 8742 + 2 be,0,4 [0]
             cat-5411    [001] .....  6370.329353: block_rq_issue: 7,0 RA 2048 () 550 + 4 be,0,4 [cat]
             cat-5411    [000] .N...  6370.330565: block_rq_issue: 7,0 RA 903168 () 16902 + 1764 be,0,4 [cat]
    kworker/u8:0-12      [001] ..s..  6370.332887: block_rq_complete: 7,0 RA () 21506 + 2048 be,0,4 [0]
              dd-5412    [001] .....  6370.337925: block_rq_issue: 7,0 RS 1048576 () 20482 + 2048 be,0,4 [dd]
";

    #[test]
    fn parses_real_issue_and_complete_lines() {
        let v = parse_trace(REAL).unwrap();
        assert_eq!(v.len(), 6);
        let a = &v[0];
        assert_eq!(a.kind, EventKind::Issue);
        assert_eq!(a.task, "cat");
        assert_eq!(a.pid, 5411);
        assert_eq!(a.cpu, 1);
        assert_eq!(a.time_ns, 6_370_329_216_000);
        assert_eq!(a.dev, (7, 0));
        assert_eq!(a.rwbs, "RM");
        assert_eq!(a.bytes, Some(1024));
        assert_eq!((a.sector, a.sectors), (8742, 2));
        assert_eq!(a.ioprio.as_deref(), Some("be,0,4"));
        assert_eq!(a.comm, "cat");
        let c = &v[1];
        assert_eq!(c.kind, EventKind::Complete);
        assert_eq!(c.task, "ksoftirqd/1");
        assert_eq!(c.pid, 22);
        assert_eq!(c.bytes, None);
        assert_eq!((c.sector, c.sectors), (8742, 2));
        assert_eq!(c.comm, "0");
        assert_eq!(v[4].task, "kworker/u8:0");
        assert_eq!(v[3].bytes, Some(903168));
        assert_eq!(v[3].bytes.unwrap(), v[3].sectors * 512);
        assert_eq!(issues(&v).len(), 4);
    }

    #[test]
    fn parses_lines_without_ioprio_and_with_odd_task_names() {
        // The LAB.md example and the pre-6.x format (no ioprio field).
        let l = "tar-8107 [001] ..... 554.891910: block_rq_issue: 7,0 RA 131072 () 4194568 + 256 be,0,4 [tar]";
        let r = parse_line(l).unwrap().unwrap();
        assert_eq!((r.sector, r.sectors, r.time_ns), (4194568, 256, 554_891_910_000));
        let old = "  Web Content-1234  [000] d..1.  12.5: block_rq_issue: 8,16 R 4096 () 2048 + 8 [Web Content]";
        let r = parse_line(old).unwrap().unwrap();
        assert_eq!(r.task, "Web Content");
        assert_eq!(r.comm, "Web Content");
        assert_eq!(r.dev, (8, 16));
        assert_eq!(r.ioprio, None);
        assert_eq!(r.time_ns, 12_500_000_000);
        let oldc = "  <idle>-0  [000] ..s1  12.600001: block_rq_complete: 8,16 R () 2048 + 8 [0]";
        let r = parse_line(oldc).unwrap().unwrap();
        assert_eq!(r.kind, EventKind::Complete);
        assert_eq!(r.task, "<idle>");
        // Passthrough requests print command bytes inside the parentheses.
        let cmd = "x-1 [000] ..... 1.000000: block_rq_issue: 8,0 R 0 (12 00 00 00 24 00) 0 + 0 be,0,4 [sg]";
        let r = parse_line(cmd).unwrap().unwrap();
        assert_eq!((r.sector, r.sectors), (0, 0));
    }

    #[test]
    fn rejects_malformed_and_lost_events() {
        assert!(parse_line("a-1 [000] ..... 1.0: block_rq_issue: 7,0 RA xx () 1 + 2 [a]").is_err());
        assert!(parse_line("a-1 [000] ..... 1.0: block_rq_issue: 7,0 RA 1024 () 1 2 [a]").is_err());
        assert!(parse_line("CPU:1 [LOST 42 EVENTS]").is_err());
        let e = parse_trace("# h\nbogus-1 [000] 1.0: block_rq_issue: 7 RA\n").unwrap_err();
        assert_eq!(e.line_no, 2);
        assert_eq!(parse_line("x-1 [000] ..... 1.0: sched_switch: foo").unwrap(), None);
    }
}
