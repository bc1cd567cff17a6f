//! `qlab`: the lab's command line. See `qlab --help`.
#![forbid(unsafe_code)]

use std::path::PathBuf;
use std::process::{Command, ExitCode};

use anyhow::{Context, Result, bail};
use clap::{Parser, Subcommand};
use qlab::age::{self, AgeParams, TreeItem};
use qlab::bench::{self, BenchConfig, Profile};
use qlab::model::{self, DiskParams};
use qlab::{layout, sys, trace, tracefs};

/// The qtar lab: block tracing, a seeking-disk model, aging, benchmarks.
#[derive(Parser)]
#[command(name = "qlab", version)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Build clean and aged images, run the peers cold, trace, price, and
    /// write a run directory (root only).
    Bench {
        /// quick: synthetic tree; full: linux-source-6.12.
        #[arg(long, value_enum, default_value = "quick")]
        profile: Profile,
        /// Cache for trees, images and traces (outside git).
        #[arg(long, env = "QLAB_CACHE", default_value = "benches/cache")]
        cache: PathBuf,
        /// Where run directories go.
        #[arg(long, default_value = "benches/runs")]
        runs: PathBuf,
        /// Cold runs per tool and image.
        #[arg(long, default_value_t = 1)]
        repeats: u32,
        /// Seed of the synthetic tree and the aging.
        #[arg(long, default_value_t = 20260101)]
        seed: u64,
        /// A qtar binary to include (modes none, inode, disk).
        #[arg(long, env = "QTAR")]
        qtar: Option<PathBuf>,
        /// Skip the aged image.
        #[arg(long)]
        no_aged: bool,
        /// Only tools whose name contains this (repeatable).
        #[arg(long)]
        only: Vec<String>,
    },
    /// Trace a block device while a command runs; print the model's price.
    Trace {
        /// The block device, e.g. /dev/loop3.
        #[arg(long)]
        dev: PathBuf,
        /// Save the raw trace text here.
        #[arg(long)]
        out: Option<PathBuf>,
        /// The command to run.
        #[arg(trailing_var_arg = true, required = true)]
        command: Vec<String>,
    },
    /// Price a saved trace (reads only) on the disk model.
    Price {
        /// The trace text as read from tracefs, or gzipped (`.gz`), as the
        /// benchmark keeps them in its cache.
        file: PathBuf,
    },
    /// Age the file system mounted at MOUNT: churn, then copy TREE into
    /// MOUNT/tree while churn goes on.
    Age {
        /// Mount point of the file system to age.
        mount: PathBuf,
        /// The tree to lay down (a directory).
        #[arg(long)]
        tree: PathBuf,
        /// RNG seed.
        #[arg(long, default_value_t = 20260101)]
        seed: u64,
        /// Churn written before the tree, in capacities.
        #[arg(long, default_value_t = 3.0)]
        churn: f64,
    },
    /// Report the layout of the files under DIR (FIEMAP via filefrag).
    Layout {
        /// Directory to walk.
        dir: PathBuf,
    },
}

fn print_price(reqs: &[trace::Request]) {
    let a = model::analyze(&DiskParams::default(), &model::read_extents(reqs));
    let m = &a.modelled;
    println!(
        "requests {} bytes {} unique {} modelled_s {:.4} one_sweep_s {:.4} single_file_s {:.4} seeks {} seek_distance_sectors {} dls {:.4}",
        m.requests,
        m.sectors * 512,
        a.unique_bytes,
        m.total_s,
        a.one_sweep.total_s,
        a.single_file_s,
        m.seeks,
        m.seek_distance,
        m.dls()
    );
}

fn real_main() -> Result<()> {
    match Cli::parse().cmd {
        Cmd::Bench { profile, cache, runs, repeats, seed, qtar, no_aged, only } => {
            let cfg = BenchConfig { profile, cache, runs, repeats, seed, qtar, aged: !no_aged, only };
            let out = bench::run(&cfg)?;
            println!("{}", out.display());
        }
        Cmd::Trace { dev, out, command } => {
            let d = tracefs::device_numbers(&dev)?;
            let (st, text, reqs) = tracefs::capture(d, &tracefs::CaptureOptions::default(), || {
                Command::new(&command[0]).args(&command[1..]).status()
            })?;
            let st = st.with_context(|| format!("running {}", command[0]))?;
            if let Some(o) = out {
                std::fs::write(&o, &text).with_context(|| format!("{}: writing", o.display()))?;
            }
            print_price(&reqs);
            if !st.success() {
                bail!("{} exited with {st}", command[0]);
            }
        }
        Cmd::Price { file } => {
            let text = if file.extension().is_some_and(|e| e == "gz") {
                let o = sys::run(Command::new("gzip").arg("-dc").arg(&file))?;
                String::from_utf8(o.stdout).with_context(|| format!("{}: not UTF-8", file.display()))?
            } else {
                std::fs::read_to_string(&file).with_context(|| format!("{}: reading", file.display()))?
            };
            let reqs = trace::parse_trace(&text).with_context(|| format!("{}", file.display()))?;
            print_price(&reqs);
        }
        Cmd::Age { mount, tree, seed, churn } => {
            let mut dirs = Vec::new();
            let mut files = Vec::new();
            for e in walkdir::WalkDir::new(&tree).min_depth(1).sort_by_file_name() {
                let e = e.with_context(|| format!("{}: walking", tree.display()))?;
                let rel = e.path().strip_prefix(&tree).expect("under tree").to_path_buf();
                if e.file_type().is_dir() {
                    dirs.push(rel);
                } else if e.file_type().is_file() {
                    let size = e.metadata().with_context(|| format!("{}: stat", e.path().display()))?.len();
                    files.push(TreeItem { rel, size, src: Some(e.path().to_path_buf()) });
                }
            }
            let mut p = AgeParams::new(seed, sys::fs_capacity(&mount)?);
            p.churn_factor = churn;
            let sizes: Vec<u64> = files.iter().map(|f| f.size).collect();
            let (ops, stats) = age::plan(&p, &sizes)?;
            age::execute(&p, &ops, &mount, std::path::Path::new("tree"), &dirs, &files)?;
            println!("{stats:?}");
        }
        Cmd::Layout { dir } => {
            let files: Vec<PathBuf> = walkdir::WalkDir::new(&dir)
                .sort_by_file_name()
                .into_iter()
                .filter_map(|e| e.ok())
                .filter(|e| e.file_type().is_file())
                .map(|e| e.into_path())
                .collect();
            let s = layout::layout_stats(&layout::filefrag(&files)?);
            println!("{s:?}");
        }
    }
    Ok(())
}

fn main() -> ExitCode {
    match real_main() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("qlab: {e:#}");
            ExitCode::FAILURE
        }
    }
}
