//! GNU-style diagnostics: `PROG: message` on stderr, and the exit status they
//! imply (0 success, 1 "some files differ/changed", 2 fatal or trouble).

use std::cell::Cell;
use std::io::Write;

/// Exit statuses, as GNU tar defines them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Status {
    /// Everything went well.
    Ok = 0,
    /// Some files changed while being read (or differ, for `--compare`).
    Differs = 1,
    /// A fatal or non-fatal error.
    Trouble = 2,
}

/// Prints diagnostics and remembers the worst status.
#[derive(Debug)]
pub struct Diag {
    prog: String,
    status: Cell<Status>,
}

impl Diag {
    /// Diagnostics prefixed with the basename of `argv0`.
    pub fn new(argv0: &std::ffi::OsStr) -> Self {
        let prog = std::path::Path::new(argv0).file_name().map_or("qtar".into(), |s| s.to_string_lossy().into_owned());
        Self { prog, status: Cell::new(Status::Ok) }
    }

    /// The program name used as prefix.
    pub fn prog(&self) -> &str {
        &self.prog
    }

    /// Prints `PROG: msg`.
    pub fn say(&self, msg: impl std::fmt::Display) {
        let mut e = std::io::stderr().lock();
        let _ = writeln!(e, "{}: {}", self.prog, msg);
    }

    /// Prints a warning that raises the status to `status`.
    pub fn warn(&self, status: Status, msg: impl std::fmt::Display) {
        self.say(msg);
        self.raise(status);
    }

    /// Prints an error (status 2).
    pub fn error(&self, msg: impl std::fmt::Display) {
        self.warn(Status::Trouble, msg);
    }

    /// Raises the status without printing.
    pub fn raise(&self, status: Status) {
        if status > self.status.get() {
            self.status.set(status);
        }
    }

    /// The worst status so far.
    pub fn status(&self) -> Status {
        self.status.get()
    }

    /// Ends the run: GNU's closing line for status 2, and the exit code.
    pub fn finish(&self) -> std::process::ExitCode {
        if self.status() == Status::Trouble {
            self.say("Exiting with failure status due to previous errors");
        }
        std::process::ExitCode::from(self.status() as u8)
    }

    /// A fatal error: prints it and GNU's "not recoverable" line; status 2.
    pub fn fatal(&self, msg: impl std::fmt::Display) -> std::process::ExitCode {
        self.say(msg);
        self.say("Error is not recoverable: exiting now");
        std::process::ExitCode::from(2)
    }
}

/// An I/O error's text as `strerror` would give it.
pub fn strerror(e: &std::io::Error) -> String {
    qtar_engine::strip_os_suffix(e)
}

/// Quotes a file name the way GNU tar's diagnostics do (`quotearg_colon` with
/// the default locale): printable bytes as they are, others as octal escapes.
pub fn quote(name: &[u8]) -> String {
    let mut s = String::new();
    for chunk in name.utf8_chunks() {
        for c in chunk.valid().chars() {
            match c {
                '\n' => s.push_str("\\n"),
                '\t' => s.push_str("\\t"),
                '\\' => s.push_str("\\\\"),
                c if c.is_control() => s.push_str(&format!("\\{:03o}", c as u32)),
                c => s.push(c),
            }
        }
        for b in chunk.invalid() {
            s.push_str(&format!("\\{b:03o}"));
        }
    }
    s
}
