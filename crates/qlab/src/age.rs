//! Seeded, deterministic file system aging (after Geriatrix, ATC'18, and
//! Conway et al., FAST'17), as LAB.md describes.
//!
//! The plan ([`plan`]) is pure: from a seed, the capacity and the benchmark
//! tree it yields the exact sequence of creates, appends, deletes and tree
//! files. Churn fills the file system to `high` (85%) with heavy-tailed sizes,
//! a fifth of the writes appending to older files, then deletes random churn
//! files down to `low` (70%), and repeats until `churn_factor` × capacity has
//! been written. Then the tree is laid down while the same churn goes on.
//! [`execute`] carries a plan out on a mounted file system with real data
//! (never fallocate), syncing every `sync_every` bytes so that delayed
//! allocation really places the blocks of short-lived files.

use std::fs::{self, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};

use crate::tree::{Data, Rng, SizeDist};

/// Parameters of aging.
#[derive(Debug, Clone, PartialEq)]
pub struct AgeParams {
    /// RNG seed.
    pub seed: u64,
    /// Usable bytes of the file system.
    pub capacity: u64,
    /// Fill target as a fraction of capacity (default 0.85).
    pub high: f64,
    /// Delete target (default 0.70).
    pub low: f64,
    /// Fraction of churn writes that append to an older file (default 0.2).
    pub append_frac: f64,
    /// Bytes written by churn before the tree, in capacities (default 3).
    pub churn_factor: f64,
    /// Size distribution of churn files and appends.
    pub dist: SizeDist,
    /// Allocation unit used to account occupancy (default 4096).
    pub block: u64,
    /// Sync the file system after this many bytes written (default 16 MiB).
    pub sync_every: u64,
}

impl AgeParams {
    /// The defaults for a file system of `capacity` bytes.
    pub fn new(seed: u64, capacity: u64) -> AgeParams {
        AgeParams {
            seed,
            capacity,
            high: 0.85,
            low: 0.70,
            append_frac: 0.2,
            churn_factor: 3.0,
            dist: SizeDist::default(),
            block: 4096,
            sync_every: 16 << 20,
        }
    }
}

/// One step of an aging plan.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AgeOp {
    /// Create churn file `id` with `size` bytes.
    Create {
        /// Churn file id.
        id: u32,
        /// Bytes.
        size: u64,
    },
    /// Append `bytes` to churn file `id`.
    Append {
        /// Churn file id.
        id: u32,
        /// Bytes.
        bytes: u64,
    },
    /// Delete churn file `id`.
    Delete {
        /// Churn file id.
        id: u32,
    },
    /// Lay down tree entry `index` (never deleted).
    Tree {
        /// Index into the tree's file list.
        index: usize,
    },
}

/// Summary of a plan.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PlanStats {
    /// Churn files created.
    pub creates: u64,
    /// Appends.
    pub appends: u64,
    /// Deletes.
    pub deletes: u64,
    /// Bytes written by churn (creates + appends).
    pub churn_bytes: u64,
    /// Fill/delete cycles completed.
    pub cycles: u64,
}

/// The path of churn file `id` relative to the file system root.
pub fn churn_path(id: u32) -> PathBuf {
    PathBuf::from(format!("churn/c{:04}/{id}", id / 1000))
}

struct State<'a> {
    p: &'a AgeParams,
    rng: Rng,
    live: Vec<(u32, u64)>,
    used: u64,
    next_id: u32,
    filling: bool,
    ops: Vec<AgeOp>,
    stats: PlanStats,
}

impl State<'_> {
    fn round(&self, b: u64) -> u64 {
        b.div_ceil(self.p.block) * self.p.block
    }

    /// One churn step, following the fill/delete cycle. Returns bytes written.
    fn step(&mut self) -> u64 {
        let cap = self.p.capacity as f64;
        if self.filling && self.used as f64 >= self.p.high * cap {
            self.filling = false;
        }
        if !self.filling && (self.used as f64 <= self.p.low * cap || self.live.is_empty()) {
            self.filling = true;
            self.stats.cycles += 1;
        }
        if self.filling {
            let size = self.p.dist.sample(&mut self.rng);
            if !self.live.is_empty() && self.rng.f64() < self.p.append_frac {
                // An older file: from the older half of the live list.
                let k = self.rng.below(self.live.len().div_ceil(2) as u64) as usize;
                let (id, old) = self.live[k];
                let grown = self.round(old + size) - self.round(old);
                self.live[k].1 = old + size;
                self.used += grown;
                self.ops.push(AgeOp::Append { id, bytes: size });
                self.stats.appends += 1;
            } else {
                let id = self.next_id;
                self.next_id += 1;
                self.live.push((id, size));
                self.used += self.round(size);
                self.ops.push(AgeOp::Create { id, size });
                self.stats.creates += 1;
            }
            self.stats.churn_bytes += size;
            size
        } else {
            let k = self.rng.below(self.live.len() as u64) as usize;
            let (id, size) = self.live.swap_remove(k);
            self.used -= self.round(size);
            self.ops.push(AgeOp::Delete { id });
            self.stats.deletes += 1;
            0
        }
    }
}

/// Plans aging for a tree whose file sizes are `tree_sizes` (in the order
/// the tree is laid down). Fails if the tree does not fit under `low`.
pub fn plan(p: &AgeParams, tree_sizes: &[u64]) -> Result<(Vec<AgeOp>, PlanStats)> {
    let mut s = State {
        p,
        rng: Rng::new(p.seed),
        live: Vec::new(),
        used: 0,
        next_id: 0,
        filling: true,
        ops: Vec::new(),
        stats: PlanStats::default(),
    };
    let tree_total: u64 = tree_sizes.iter().map(|&b| s.round(b)).sum();
    if tree_total as f64 > (p.low - 0.05) * p.capacity as f64 {
        bail!(
            "tree of {tree_total} bytes does not fit an aged file system of {} bytes (needs < {:.0}%)",
            p.capacity,
            (p.low - 0.05) * 100.0
        );
    }
    let budget = (p.churn_factor * p.capacity as f64) as u64;
    while s.stats.churn_bytes < budget {
        s.step();
    }
    // Lay the tree down while churn continues: between tree files, churn
    // steps write about as many bytes as the tree file.
    for (index, &size) in tree_sizes.iter().enumerate() {
        s.ops.push(AgeOp::Tree { index });
        s.used += s.round(size);
        let mut written = 0;
        let mut guard = 0;
        while written < size && guard < 64 {
            written += s.step();
            guard += 1;
        }
    }
    Ok((s.ops, s.stats))
}

/// One entry of a tree to lay down: a regular file copied from `src`, or
/// generated data of `size` bytes when `src` is `None`.
#[derive(Debug, Clone)]
pub struct TreeItem {
    /// Path relative to the tree root.
    pub rel: PathBuf,
    /// Bytes.
    pub size: u64,
    /// Source file to copy, if any.
    pub src: Option<PathBuf>,
}

/// Carries out a plan on the file system mounted at `fs_root`, laying the
/// tree under `fs_root/tree_dir`. Directories of the tree (`tree_dirs`) are
/// created first, then the ops run in order.
pub fn execute(
    p: &AgeParams,
    ops: &[AgeOp],
    fs_root: &Path,
    tree_dir: &Path,
    tree_dirs: &[PathBuf],
    tree: &[TreeItem],
) -> Result<()> {
    let data = Data::new(p.seed);
    let mut since_sync = 0u64;
    let sync = |root: &Path| -> Result<()> {
        let d = fs::File::open(root).with_context(|| format!("{}: opening", root.display()))?;
        rustix::fs::syncfs(&d).with_context(|| format!("{}: syncfs", root.display()))?;
        Ok(())
    };
    let troot = fs_root.join(tree_dir);
    for d in tree_dirs {
        let q = troot.join(d);
        fs::create_dir_all(&q).with_context(|| format!("{}: creating directory", q.display()))?;
    }
    let mut made_dirs = std::collections::HashSet::new();
    for op in ops {
        match *op {
            AgeOp::Create { id, size } => {
                let rel = churn_path(id);
                let dir = id / 1000;
                let path = fs_root.join(&rel);
                if made_dirs.insert(dir) {
                    let parent = path.parent().expect("churn path has a parent");
                    fs::create_dir_all(parent).with_context(|| format!("{}: creating", parent.display()))?;
                }
                let mut f = fs::File::create(&path).with_context(|| format!("{}: creating", path.display()))?;
                data.write(u64::from(id), size, &mut f)
                    .with_context(|| format!("{}: writing {size} bytes", path.display()))?;
                since_sync += size;
            }
            AgeOp::Append { id, bytes } => {
                let path = fs_root.join(churn_path(id));
                let mut f = OpenOptions::new()
                    .append(true)
                    .open(&path)
                    .with_context(|| format!("{}: opening to append", path.display()))?;
                data.write(u64::from(id) ^ bytes, bytes, &mut f)
                    .with_context(|| format!("{}: appending {bytes} bytes", path.display()))?;
                since_sync += bytes;
            }
            AgeOp::Delete { id } => {
                let path = fs_root.join(churn_path(id));
                fs::remove_file(&path).with_context(|| format!("{}: deleting", path.display()))?;
            }
            AgeOp::Tree { index } => {
                let item = &tree[index];
                let dst = troot.join(&item.rel);
                if let Some(parent) = dst.parent() {
                    if !parent.is_dir() {
                        fs::create_dir_all(parent).with_context(|| format!("{}: creating", parent.display()))?;
                    }
                }
                match &item.src {
                    Some(src) => {
                        fs::copy(src, &dst)
                            .with_context(|| format!("{}: copying from {}", dst.display(), src.display()))?;
                    }
                    None => {
                        let mut f = fs::File::create(&dst).with_context(|| format!("{}: creating", dst.display()))?;
                        data.write(index as u64, item.size, &mut f)
                            .with_context(|| format!("{}: writing", dst.display()))?;
                        f.flush().ok();
                    }
                }
                since_sync += item.size;
            }
        }
        if since_sync >= p.sync_every {
            sync(fs_root)?;
            since_sync = 0;
        }
    }
    sync(fs_root)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sizes() -> Vec<u64> {
        crate::tree::synthetic(5, 300, 20 << 20).files.iter().map(|f| f.size).collect()
    }

    #[test]
    fn plan_is_deterministic_and_follows_the_cycle() {
        let p = AgeParams::new(11, 256 << 20);
        let t = sizes();
        let (a, sa) = plan(&p, &t).unwrap();
        let (b, sb) = plan(&p, &t).unwrap();
        assert_eq!(a, b);
        assert_eq!(sa, sb);
        let (c, _) = plan(&AgeParams::new(12, 256 << 20), &t).unwrap();
        assert_ne!(a, c);
        assert!(sa.churn_bytes >= 3 * (256 << 20));
        assert!(sa.cycles >= 3, "cycles {}", sa.cycles);
        let frac = sa.appends as f64 / (sa.appends + sa.creates) as f64;
        assert!((0.15..0.25).contains(&frac), "append fraction {frac}");
        // Every tree file appears once, in order; ops only touch live files.
        let tree_ops: Vec<usize> =
            a.iter().filter_map(|o| if let AgeOp::Tree { index } = o { Some(*index) } else { None }).collect();
        assert_eq!(tree_ops, (0..t.len()).collect::<Vec<_>>());
        let mut live = std::collections::HashSet::new();
        let mut used: u64 = 0;
        let mut size = std::collections::HashMap::new();
        let r = |b: u64| b.div_ceil(4096) * 4096;
        let mut peak = 0;
        for o in &a {
            match *o {
                AgeOp::Create { id, size: s } => {
                    assert!(live.insert(id));
                    size.insert(id, s);
                    used += r(s);
                }
                AgeOp::Append { id, bytes } => {
                    assert!(live.contains(&id));
                    let s = size[&id];
                    used += r(s + bytes) - r(s);
                    size.insert(id, s + bytes);
                }
                AgeOp::Delete { id } => {
                    assert!(live.remove(&id));
                    used -= r(size[&id]);
                }
                AgeOp::Tree { index } => used += r(t[index]),
            }
            peak = peak.max(used);
        }
        // Never much past 85% (one file of overshoot at most).
        assert!((peak as f64) < 0.85 * (256u64 << 20) as f64 + (64u64 << 20) as f64);
    }

    #[test]
    fn tree_too_big_is_refused() {
        let p = AgeParams::new(1, 16 << 20);
        assert!(plan(&p, &[15 << 20]).is_err());
    }
}
