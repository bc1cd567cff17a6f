//! File layout from FIEMAP, read through `filefrag -v -e` (no ioctl here:
//! the lab forbids `unsafe`), and the aging measures built on it.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail};

/// One extent of a file, in bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Extent {
    /// Offset in the file.
    pub logical: u64,
    /// Offset on the device (file system image).
    pub physical: u64,
    /// Length.
    pub len: u64,
}

/// The extents of one file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileMap {
    /// The path as filefrag printed it.
    pub path: PathBuf,
    /// File size in bytes.
    pub size: u64,
    /// The file system block size filefrag counted in.
    pub block_size: u64,
    /// Extents in logical order.
    pub extents: Vec<Extent>,
}

/// Parses the output of `filefrag -v -e FILE...`.
pub fn parse_filefrag(text: &str) -> Result<Vec<FileMap>> {
    let mut out: Vec<FileMap> = Vec::new();
    for (no, line) in text.lines().enumerate() {
        let bad = || format!("filefrag output line {}: {:?}", no + 1, line);
        if let Some(rest) = line.strip_prefix("File size of ") {
            let is = rest.rfind(" is ").with_context(bad)?;
            let path = PathBuf::from(&rest[..is]);
            let tail = &rest[is + 4..];
            let mut w = tail.split_whitespace();
            let size: u64 = w.next().with_context(bad)?.parse().with_context(bad)?;
            let of = tail.find(" of ").with_context(bad)?;
            let bs: u64 = tail[of + 4..].split_whitespace().next().with_context(bad)?.parse().with_context(bad)?;
            out.push(FileMap { path, size, block_size: bs, extents: Vec::new() });
            continue;
        }
        let t = line.trim_start();
        let Some((idx, rest)) = t.split_once(':') else {
            continue;
        };
        if idx.is_empty() || !idx.bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        // "  0:        0..    2047:      10241..     12288:   2048:  [expected:] flags"
        let f: Vec<&str> = rest.split(':').map(str::trim).collect();
        if f.len() < 3 {
            bail!(bad());
        }
        let range = |s: &str| -> Option<(u64, u64)> {
            let (a, b) = s.split_once("..")?;
            Some((a.trim().parse().ok()?, b.trim().parse().ok()?))
        };
        let (l0, _) = range(f[0]).with_context(bad)?;
        let (p0, _) = range(f[1]).with_context(bad)?;
        let len: u64 = f[2].parse().with_context(bad)?;
        let cur = out.last_mut().with_context(bad)?;
        let bs = cur.block_size;
        cur.extents.push(Extent { logical: l0 * bs, physical: p0 * bs, len: len * bs });
    }
    Ok(out)
}

/// Runs `filefrag -v -e` on the files (in batches) and parses the result.
pub fn filefrag(files: &[PathBuf]) -> Result<Vec<FileMap>> {
    let mut out = Vec::with_capacity(files.len());
    for chunk in files.chunks(512) {
        let o = crate::sys::run(Command::new("filefrag").arg("-v").arg("-e").args(chunk))?;
        let maps = parse_filefrag(&String::from_utf8_lossy(&o.stdout))?;
        if maps.len() != chunk.len() {
            bail!("filefrag printed {} files for {} asked (first {})", maps.len(), chunk.len(), chunk[0].display());
        }
        out.extend(maps);
    }
    Ok(out)
}

/// How aged a set of files is.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LayoutStats {
    /// Files measured.
    pub files: u64,
    /// Files with at least one extent.
    pub files_with_data: u64,
    /// Total extents (adjacent extents that continue physically are merged
    /// first, as ext4 splits at 128 MiB only for bookkeeping).
    pub extents: u64,
    /// Extents per file with data.
    pub extents_per_file: f64,
    /// Layout score: the fraction of file blocks (after each file's first)
    /// that physically follow the previous logical block.
    pub layout_score: f64,
    /// Fraction of files (with data) whose first block follows the previous
    /// file's last block, in the order given (e.g. tree walk order).
    pub interfile_contiguity: f64,
}

/// Computes [`LayoutStats`] over files in the order given.
pub fn layout_stats(maps: &[FileMap]) -> LayoutStats {
    let (mut blocks, mut follow, mut extents, mut with_data) = (0u64, 0u64, 0u64, 0u64);
    let (mut inter_ok, mut inter_n) = (0u64, 0u64);
    let mut prev_end: Option<u64> = None;
    for m in maps {
        if m.extents.is_empty() {
            continue;
        }
        with_data += 1;
        let bs = m.block_size.max(1);
        let mut n_ext = 0u64;
        let mut last: Option<(u64, u64)> = None; // (logical end, physical end)
        for e in &m.extents {
            let nb = e.len / bs;
            blocks += nb.saturating_sub(if last.is_none() { 1 } else { 0 });
            match last {
                Some((le, pe)) if le == e.logical && pe == e.physical => {
                    follow += nb;
                }
                Some(_) => {
                    follow += nb.saturating_sub(1);
                    n_ext += 1;
                }
                None => {
                    follow += nb.saturating_sub(1);
                    n_ext += 1;
                }
            }
            last = Some((e.logical + e.len, e.physical + e.len));
        }
        extents += n_ext;
        if let Some(pe) = prev_end {
            inter_n += 1;
            if m.extents[0].physical == pe {
                inter_ok += 1;
            }
        }
        prev_end = last.map(|l| l.1);
    }
    LayoutStats {
        files: maps.len() as u64,
        files_with_data: with_data,
        extents,
        extents_per_file: if with_data == 0 { 0.0 } else { extents as f64 / with_data as f64 },
        layout_score: if blocks == 0 { 1.0 } else { follow as f64 / blocks as f64 },
        interfile_contiguity: if inter_n == 0 { 1.0 } else { inter_ok as f64 / inter_n as f64 },
    }
}

/// Runs `e2freefrag` on an ext4 image or device and returns its report.
pub fn e2freefrag(dev: &Path) -> Result<String> {
    let o = crate::sys::run(Command::new("e2freefrag").arg(dev))?;
    Ok(String::from_utf8_lossy(&o.stdout).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    const OUT: &str = "Filesystem type is: ef53
File size of /m/f is 3000000 (2930 blocks of 1024 bytes)
 ext:     logical_offset:        physical_offset: length:   expected: flags:
   0:        0..    2047:      10241..     12288:   2048:            
   1:     2048..    2929:       8451..      9332:    882:      12289: last,eof
/m/f: 2 extents found
File size of /m/empty is 0 (0 blocks of 1024 bytes)
/m/empty: 0 extents found
File size of /m/a b/x y is 100000 (98 blocks of 1024 bytes)
 ext:     logical_offset:        physical_offset: length:   expected: flags:
   0:        0..      97:      16257..     16354:     98:             last,eof
/m/a b/x y: 1 extent found
";

    #[test]
    fn parses_real_filefrag_output() {
        let m = parse_filefrag(OUT).unwrap();
        assert_eq!(m.len(), 3);
        assert_eq!(m[0].size, 3_000_000);
        assert_eq!(
            m[0].extents,
            vec![
                Extent { logical: 0, physical: 10241 * 1024, len: 2048 * 1024 },
                Extent { logical: 2048 * 1024, physical: 8451 * 1024, len: 882 * 1024 },
            ]
        );
        assert!(m[1].extents.is_empty());
        assert_eq!(m[2].path, PathBuf::from("/m/a b/x y"));
        let s = layout_stats(&m);
        assert_eq!(s.files_with_data, 2);
        assert_eq!(s.extents, 3);
        // blocks after first: 2929 + 97; following: 2047 + 881 + 97.
        assert!((s.layout_score - (2047.0 + 881.0 + 97.0) / (2929.0 + 97.0)).abs() < 1e-12);
        assert_eq!(s.interfile_contiguity, 0.0);
    }
}
