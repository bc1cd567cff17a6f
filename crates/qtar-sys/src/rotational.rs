//! Is the device under a file rotational?

use std::path::PathBuf;

/// A block device number.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct BlockDev {
    /// Major number.
    pub major: u32,
    /// Minor number.
    pub minor: u32,
}

impl BlockDev {
    /// The device of a `statx` result (`stx_dev_major`, `stx_dev_minor`).
    pub fn of(st: &rustix::fs::Statx) -> Self {
        Self { major: st.stx_dev_major, minor: st.stx_dev_minor }
    }

    fn sysfs(&self) -> PathBuf {
        PathBuf::from(format!("/sys/dev/block/{}:{}", self.major, self.minor))
    }
}

/// `Some(true)` for a rotational device, `Some(false)` for a non-rotational one,
/// `None` when the file system has no single block device (tmpfs, NFS, btrfs
/// with an anonymous `st_dev`, …). A partition answers for its disk.
pub fn rotational(dev: BlockDev) -> Option<bool> {
    let base = dev.sysfs().canonicalize().ok()?;
    for dir in [base.clone(), base.parent()?.to_path_buf()] {
        if let Ok(s) = std::fs::read_to_string(dir.join("queue/rotational")) {
            return match s.trim() {
                "1" => Some(true),
                "0" => Some(false),
                _ => None,
            };
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn agrees_with_sysfs_for_the_root_device() {
        let st = crate::statx_at(rustix::fs::CWD, b"/", false).unwrap();
        let dev = BlockDev::of(&st);
        let got = rotational(dev);
        if let Some(r) = got {
            let want = std::fs::read_to_string(dev.sysfs().canonicalize().unwrap().join("queue/rotational"))
                .or_else(|_| {
                    std::fs::read_to_string(
                        dev.sysfs().canonicalize().unwrap().parent().unwrap().join("queue/rotational"),
                    )
                })
                .unwrap();
            assert_eq!(r, want.trim() == "1");
        }
        // An anonymous device (major 0) has no queue.
        assert_eq!(rotational(BlockDev { major: 0, minor: 12345 }), None);
    }
}
