//! Errors that name the path and the cause.

use std::fmt;
use std::io;
use std::path::{Path, PathBuf};

/// What the engine was doing when an error happened, worded like GNU tar.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    /// `stat` of an entry.
    Stat,
    /// Opening a directory.
    OpenDir,
    /// Reading a directory's entries.
    ReadDir,
    /// Opening a file.
    Open,
    /// Reading a file.
    Read,
    /// Reading a symbolic link's target.
    ReadLink,
}

impl Op {
    fn gnu(self) -> &'static str {
        match self {
            Op::Stat => "Cannot stat",
            Op::OpenDir => "Cannot open",
            Op::ReadDir => "Cannot read directory",
            Op::Open => "Cannot open",
            Op::Read => "Read error",
            Op::ReadLink => "Cannot readlink",
        }
    }
}

/// An I/O error on one path. `Display` reads like GNU tar: `PATH: Cannot open: Permission denied`.
#[derive(Debug, thiserror::Error)]
pub struct Error {
    path: PathBuf,
    op: Op,
    #[source]
    source: io::Error,
}

impl Error {
    pub(crate) fn new(path: impl Into<PathBuf>, op: Op, source: io::Error) -> Self {
        Self { path: path.into(), op, source }
    }

    /// The path the error is about.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// What was being done.
    pub fn op(&self) -> Op {
        self.op
    }

    /// The underlying I/O error.
    pub fn io(&self) -> &io::Error {
        &self.source
    }

    /// Whether the file vanished between discovery and use (`ENOENT`), which
    /// GNU tar reports as a warning with exit status 1 rather than an error.
    pub fn is_vanished(&self) -> bool {
        self.source.kind() == io::ErrorKind::NotFound
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let msg = strip_os_suffix(&self.source);
        write!(f, "{}: {}: {}", self.path.display(), self.op.gnu(), msg)
    }
}

/// `io::Error`'s text without Rust's " (os error N)" suffix, like `strerror`.
pub fn strip_os_suffix(e: &io::Error) -> String {
    let s = e.to_string();
    match s.rfind(" (os error ") {
        Some(i) => s[..i].to_string(),
        None => s,
    }
}
