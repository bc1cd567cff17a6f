//! Capture block requests of one device with a private tracefs instance.
//!
//! The global tracing instance is shared with every other process on the
//! machine, so it is never touched: each capture makes its own instance
//! `/sys/kernel/tracing/instances/qlab<pid>-<n>`, filters
//! `block_rq_issue` (and optionally `block_rq_complete`) on
//! `dev == (MAJOR << 20) | MINOR`, and drains `trace_pipe` in a thread while
//! the workload runs, so the ring buffer cannot overflow on long runs. When the
//! capture stops, the per-CPU `stats` files are checked: any overrun or
//! dropped event is an error, never a silently short trace.

use std::fs::{self, File};
use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

use crate::trace::{self, ParseError, Request};

/// Where tracefs is mounted.
pub const TRACEFS: &str = "/sys/kernel/tracing";

/// Errors from a capture. Each names the tracefs file and the cause.
#[derive(Debug, thiserror::Error)]
pub enum TraceError {
    /// A tracefs file could not be read or written.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The cause.
        #[source]
        source: io::Error,
    },
    /// Mounting tracefs failed.
    #[error("mounting tracefs on {TRACEFS} failed: {0}")]
    Mount(String),
    /// The ring buffer lost events.
    #[error("{path}: trace lost events (overrun {overrun}, dropped {dropped}); raise buffer_size_kb")]
    Lost {
        /// The per-CPU stats file that reported it.
        path: PathBuf,
        /// `overrun:` count.
        overrun: u64,
        /// `dropped events:` count.
        dropped: u64,
    },
    /// The captured text did not parse.
    #[error("parsing the captured trace: {0}")]
    Parse(#[from] ParseError),
}

fn io_err(path: &Path) -> impl FnOnce(io::Error) -> TraceError + '_ {
    move |source| TraceError::Io { path: path.to_path_buf(), source }
}

/// Options of a capture.
#[derive(Debug, Clone)]
pub struct CaptureOptions {
    /// Per-CPU ring buffer size in KiB (`buffer_size_kb`).
    pub buffer_size_kb: u64,
    /// Also record `block_rq_complete`.
    pub complete: bool,
}

impl Default for CaptureOptions {
    fn default() -> Self {
        CaptureOptions { buffer_size_kb: 16384, complete: true }
    }
}

/// The (major, minor) numbers of a block device node such as `/dev/loop3`.
pub fn device_numbers(path: &Path) -> Result<(u32, u32), TraceError> {
    let st = rustix::fs::stat(path).map_err(|e| TraceError::Io { path: path.to_path_buf(), source: e.into() })?;
    Ok((rustix::fs::major(st.st_rdev), rustix::fs::minor(st.st_rdev)))
}

/// Mounts tracefs on [`TRACEFS`] if it is not mounted yet.
pub fn ensure_tracefs() -> Result<(), TraceError> {
    if Path::new(TRACEFS).join("instances").is_dir() {
        return Ok(());
    }
    let out = Command::new("mount")
        .args(["-t", "tracefs", "nodev", TRACEFS])
        .output()
        .map_err(|e| TraceError::Mount(e.to_string()))?;
    if !out.status.success() {
        return Err(TraceError::Mount(String::from_utf8_lossy(&out.stderr).trim().to_string()));
    }
    Ok(())
}

static COUNTER: AtomicU32 = AtomicU32::new(0);

/// A running capture. Call [`Capture::finish`] to stop it and get the text;
/// dropping it without finishing disables the events and removes the
/// instance.
pub struct Capture {
    dir: PathBuf,
    events: Vec<PathBuf>,
    stop: Arc<AtomicBool>,
    reader: Option<JoinHandle<io::Result<Vec<u8>>>>,
    done: bool,
}

fn write(path: &Path, value: &str) -> Result<(), TraceError> {
    fs::write(path, value).map_err(io_err(path))
}

impl Capture {
    /// Creates a private instance and starts recording block requests of
    /// `dev`.
    pub fn start(dev: (u32, u32), opts: &CaptureOptions) -> Result<Capture, TraceError> {
        ensure_tracefs()?;
        let n = COUNTER.fetch_add(1, Ordering::SeqCst);
        let dir = Path::new(TRACEFS).join("instances").join(format!("qlab{}-{}", std::process::id(), n));
        fs::create_dir(&dir).map_err(io_err(&dir))?;
        let mut cap = Capture {
            dir: dir.clone(),
            events: Vec::new(),
            stop: Arc::new(AtomicBool::new(false)),
            reader: None,
            done: false,
        };
        write(&dir.join("buffer_size_kb"), &opts.buffer_size_kb.to_string())?;
        let filter = format!("dev == {}", (u64::from(dev.0) << 20) | u64::from(dev.1));
        let mut names = vec!["block_rq_issue"];
        if opts.complete {
            names.push("block_rq_complete");
        }
        for name in names {
            let ev = dir.join("events/block").join(name);
            write(&ev.join("filter"), &filter)?;
            cap.events.push(ev);
        }
        let pipe = dir.join("trace_pipe");
        let file: File = rustix::fs::open(
            &pipe,
            rustix::fs::OFlags::RDONLY | rustix::fs::OFlags::NONBLOCK | rustix::fs::OFlags::CLOEXEC,
            rustix::fs::Mode::empty(),
        )
        .map_err(|e| TraceError::Io { path: pipe.clone(), source: e.into() })?
        .into();
        let stop = cap.stop.clone();
        cap.reader = Some(std::thread::spawn(move || drain(file, &stop)));
        for ev in &cap.events {
            write(&ev.join("enable"), "1")?;
        }
        Ok(cap)
    }

    /// The instance directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Stops recording, drains the buffer, checks for lost events, removes
    /// the instance and returns the raw trace text.
    pub fn finish(mut self) -> Result<String, TraceError> {
        let r = self.stop_inner();
        self.done = true;
        let rm = self.remove();
        let text = r?;
        rm?;
        Ok(text)
    }

    fn stop_inner(&mut self) -> Result<String, TraceError> {
        for ev in &self.events {
            write(&ev.join("enable"), "0")?;
        }
        self.stop.store(true, Ordering::SeqCst);
        let pipe = self.dir.join("trace_pipe");
        let bytes = match self.reader.take() {
            Some(h) => h
                .join()
                .map_err(|_| TraceError::Io { path: pipe.clone(), source: io::Error::other("reader thread panicked") })?
                .map_err(io_err(&pipe))?,
            None => Vec::new(),
        };
        self.check_lost()?;
        Ok(String::from_utf8_lossy(&bytes).into_owned())
    }

    fn check_lost(&self) -> Result<(), TraceError> {
        let per_cpu = self.dir.join("per_cpu");
        let entries = fs::read_dir(&per_cpu).map_err(io_err(&per_cpu))?;
        for e in entries {
            let e = e.map_err(io_err(&per_cpu))?;
            let stats = e.path().join("stats");
            let text = fs::read_to_string(&stats).map_err(io_err(&stats))?;
            let field = |name: &str| {
                text.lines().find_map(|l| l.strip_prefix(name)).and_then(|v| v.trim().parse::<u64>().ok()).unwrap_or(0)
            };
            let overrun = field("overrun:");
            let dropped = field("dropped events:");
            if overrun != 0 || dropped != 0 {
                return Err(TraceError::Lost { path: stats, overrun, dropped });
            }
        }
        Ok(())
    }

    fn remove(&mut self) -> Result<(), TraceError> {
        // rmdir fails with EBUSY while a reader holds trace_pipe open; the
        // reader thread has been joined by now. Retry briefly regardless.
        let mut last = None;
        for _ in 0..50 {
            match fs::remove_dir(&self.dir) {
                Ok(()) => return Ok(()),
                Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
                Err(e) => last = Some(e),
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        Err(TraceError::Io { path: self.dir.clone(), source: last.unwrap_or_else(|| io::Error::other("rmdir failed")) })
    }
}

impl Drop for Capture {
    fn drop(&mut self) {
        if !self.done {
            for ev in &self.events {
                let _ = fs::write(ev.join("enable"), "0");
            }
            self.stop.store(true, Ordering::SeqCst);
            if let Some(h) = self.reader.take() {
                let _ = h.join();
            }
            let _ = self.remove();
        }
    }
}

fn drain(mut f: File, stop: &AtomicBool) -> io::Result<Vec<u8>> {
    let mut out = Vec::new();
    let mut buf = vec![0u8; 1 << 16];
    loop {
        // Read the flag before reading, so that after the events are
        // disabled and the flag is set, one full drain to EAGAIN follows.
        let stopping = stop.load(Ordering::SeqCst);
        match f.read(&mut buf) {
            Ok(0) => {
                if stopping {
                    return Ok(out);
                }
                std::thread::sleep(Duration::from_millis(10));
            }
            Ok(n) => out.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                if stopping {
                    return Ok(out);
                }
                std::thread::sleep(Duration::from_millis(10));
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
}

/// Runs `f` while capturing the block requests of `dev`; returns its result,
/// the raw trace text and the parsed requests.
pub fn capture<T>(
    dev: (u32, u32),
    opts: &CaptureOptions,
    f: impl FnOnce() -> T,
) -> Result<(T, String, Vec<Request>), TraceError> {
    let cap = Capture::start(dev, opts)?;
    let out = f();
    let text = cap.finish()?;
    let reqs = trace::parse_trace(&text)?;
    Ok((out, text, reqs))
}
