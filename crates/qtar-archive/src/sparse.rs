//! Sparse files: hole detection with SEEK_DATA/SEEK_HOLE and GNU sparse maps.

use std::fs::File;
use std::io;

use rustix::fs::SeekFrom;

use crate::write::BLOCK;

/// One data region of a sparse file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Region {
    pub offset: u64,
    pub len: u64,
}

/// Data regions of the first `size` bytes of `f`, or `None` when the file
/// system does not support SEEK_DATA (then the file is stored normally).
pub(crate) fn scan(f: &File, size: u64) -> io::Result<Option<Vec<Region>>> {
    let mut regions = Vec::new();
    let mut pos = 0u64;
    while pos < size {
        let data = match rustix::fs::seek(f, SeekFrom::Data(pos)) {
            Ok(d) => d,
            Err(rustix::io::Errno::NXIO) => break,
            Err(rustix::io::Errno::INVAL) if pos == 0 => return Ok(None),
            Err(e) => return Err(e.into()),
        };
        if data >= size {
            break;
        }
        let hole = match rustix::fs::seek(f, SeekFrom::Hole(data)) {
            Ok(h) => h.min(size),
            Err(rustix::io::Errno::NXIO) => size,
            Err(e) => return Err(e.into()),
        };
        if hole > data {
            regions.push(Region { offset: data, len: hole - data });
        }
        pos = hole;
    }
    rustix::fs::seek(f, SeekFrom::Start(0))?;
    Ok(Some(regions))
}

/// The map GNU tar 1.34 stores: the data regions plus a terminating empty
/// region at the end of the file (always, even when data reaches the end).
pub(crate) fn gnu_map(regions: &[Region], size: u64) -> Vec<Region> {
    let mut map = regions.to_vec();
    map.push(Region { offset: size, len: 0 });
    map
}

/// GNU sparse 1.0 map block(s) of a pax member: decimal count, then offset
/// and size per region, one per line, padded to a block boundary.
pub(crate) fn pax_map_block(regions: &[Region], size: u64) -> Vec<u8> {
    let map = gnu_map(regions, size);
    let mut s = format!("{}\n", map.len());
    for r in &map {
        s.push_str(&format!("{}\n{}\n", r.offset, r.len));
    }
    let mut v = s.into_bytes();
    let pad = (BLOCK - v.len() % BLOCK) % BLOCK;
    v.resize(v.len() + pad, 0);
    v
}
