//! The machine's DAMON page-out schemes, paused while a benchmark runs.
//!
//! The lab VMs run a DAMON `pageout` scheme on physical memory (regions not
//! accessed for a few aggregation intervals are paged out, to hand memory back
//! to the host). Page cache that a reader has asked for but not yet touched
//! (read-ahead, `FADV_WILLNEED`) looks cold to it, so it is evicted and read a
//! second time: a prefetching reader pays for its prefetch twice, and its
//! request stream varies from run to run (on the full linux-source tree, the
//! same qtar binary modelled at 13.99 s and 12.42 s on the clean image with it
//! on, 12.42 s twice with it off). [`Paused`] turns every running kdamond off and
//! turns them back on when dropped, so runs see a plain page cache, as on a
//! machine without DAMON; the run's `versions.txt` says so.

use std::fs;
use std::path::{Path, PathBuf};

const KDAMONDS: &str = "/sys/kernel/mm/damon/admin/kdamonds";

/// Kdamonds turned off for the duration of a run; restored on drop.
#[derive(Debug, Default)]
pub struct Paused {
    stopped: Vec<PathBuf>,
}

impl Paused {
    /// Turns off every kdamond that is on (none when DAMON is absent).
    pub fn pause() -> Self {
        Self::pause_in(Path::new(KDAMONDS))
    }

    fn pause_in(dir: &Path) -> Self {
        let mut stopped = Vec::new();
        let Ok(entries) = fs::read_dir(dir) else { return Self { stopped } };
        for e in entries.flatten() {
            let state = e.path().join("state");
            if fs::read_to_string(&state).is_ok_and(|s| s.trim() == "on") && fs::write(&state, "off").is_ok() {
                stopped.push(state);
            }
        }
        stopped.sort();
        Self { stopped }
    }

    /// A line for the run's records.
    pub fn describe(&self) -> String {
        if self.stopped.is_empty() {
            "DAMON: no kdamond running".into()
        } else {
            format!(
                "DAMON: {} kdamond(s) paused for the run (their pageout scheme evicts untouched read-ahead): {}",
                self.stopped.len(),
                self.stopped.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", ")
            )
        }
    }
}

impl Drop for Paused {
    fn drop(&mut self) {
        for state in &self.stopped {
            if let Err(e) = fs::write(state, "on") {
                eprintln!("qlab: could not restart {}: {e}", state.display());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pauses_running_kdamonds_and_restores_them() {
        let dir = tempfile::tempdir().unwrap();
        for (k, s) in [("0", "on\n"), ("1", "off\n")] {
            fs::create_dir(dir.path().join(k)).unwrap();
            fs::write(dir.path().join(k).join("state"), s).unwrap();
        }
        fs::write(dir.path().join("nr_kdamonds"), "2\n").unwrap();
        let p = Paused::pause_in(dir.path());
        assert_eq!(fs::read_to_string(dir.path().join("0/state")).unwrap(), "off");
        assert_eq!(fs::read_to_string(dir.path().join("1/state")).unwrap(), "off\n");
        assert!(p.describe().contains("1 kdamond(s) paused"), "{}", p.describe());
        drop(p);
        assert_eq!(fs::read_to_string(dir.path().join("0/state")).unwrap(), "on");
        assert_eq!(fs::read_to_string(dir.path().join("1/state")).unwrap(), "off\n");
        assert_eq!(Paused::pause_in(&dir.path().join("absent")).describe(), "DAMON: no kdamond running");
    }
}
