//! The qtar command-line tools, callable in-process.
//!
//! * [`tar`]: `qtar`, a GNU tar 1.34 drop-in that archives in disk order.
//!
//! Each tool is a function from arguments to an exit code, so tests and
//! benchmarks can run it without spawning a process; `src/bin/*.rs` are
//! one-line `main`s.
#![forbid(unsafe_code)]

pub mod diag;
pub mod tar;
