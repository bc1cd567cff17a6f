//! The qtar lab: block tracing, a seeking-disk model, file system aging and
//! the benchmark runner.
//!
//! * [`trace`] parses tracefs `block_rq_issue`/`block_rq_complete` lines;
//! * [`tracefs`] captures them for one device in a private instance;
//! * [`model`] prices a trace on a modelled 7200 rpm disk, with bounds;
//! * [`layout`] reads FIEMAP layout through `filefrag` and scores it;
//! * [`tree`] and [`age`] make seeded synthetic trees and aged images;
//! * [`damon`] pauses the machine's DAMON page-out while a run measures;
//! * [`bench`] runs the peers on clean and aged images and writes a run.
//!
//! ```
//! use qlab::model::{DiskParams, analyze};
//! // Two reads, the second 64 MiB further in: one seek.
//! let a = analyze(&DiskParams::default(), &[(0, 256), (131072, 256)]);
//! assert_eq!(a.modelled.seeks, 1);
//! assert!(a.one_sweep.total_s <= a.modelled.total_s);
//! ```
#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub mod age;
pub mod bench;
pub mod damon;
pub mod layout;
pub mod model;
pub mod plot;
pub mod sys;
pub mod trace;
pub mod tracefs;
pub mod tree;
