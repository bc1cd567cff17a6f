//! Byte-for-byte comparison of our archives with GNU tar 1.34's for the same
//! files, in every format.

mod common;

use common::*;
use qtar_archive::{ArchiveError, ArchiveWriter, EntryKind, Format, WriteOptions};

fn compare(format: Format, flag: &str) {
    let dir = tmpdir();
    let root = dir.path();
    let root_ok = require_root("device and large-uid members");
    let names = build_tree(root, root_ok);
    let (mine, _) = ours(root, &names, WriteOptions::new(format));
    let theirs = gnu(root, &names, &[flag]);
    assert_same_archive(&mine, &theirs, flag);
}

#[test]
fn gnu_format_matches_gnu_tar() {
    compare(Format::Gnu, "--format=gnu");
}

#[test]
fn oldgnu_format_matches_gnu_tar() {
    compare(Format::OldGnu, "--format=oldgnu");
}

#[test]
fn pax_format_matches_gnu_tar() {
    compare(Format::Pax, "--format=pax");
}

#[test]
fn posix_format_matches_gnu_tar() {
    compare(Format::Posix, "--format=posix");
}

/// ustar: everything representable matches GNU; the rest is refused with
/// GNU's message.
#[test]
fn ustar_matches_gnu_tar_and_refuses_the_rest() {
    let dir = tmpdir();
    let root = dir.path();
    let root_ok = require_root("device members");
    let mut names = build_tree(root, root_ok);
    // Single components over 100 bytes cannot be split into prefix/name.
    names.retain(|n| {
        n != b"bigid" && n != b"b512" && n != b"sl_long" && n.rsplit(|&c| c == b'/').next().unwrap().len() <= 100
    });
    let mut mine = ours(root, &names, WriteOptions::new(Format::Ustar)).0;
    let theirs = gnu(root, &names, &["--format=ustar"]);
    assert_same_archive(&mine, &theirs, "ustar");
    mine.clear();

    let mut c = Collector::new();
    let mut w = ArchiveWriter::new(Vec::new(), WriteOptions::new(Format::Ustar));
    // pre-1970 mtime
    let m = c.meta(root, b"b512");
    let e = w.append(b"b512", &m, Some(&mut std::fs::File::open(root.join("b512")).unwrap())).unwrap_err();
    assert!(m.mtime.sec < 0);
    assert_eq!(e.to_string(), format!("b512: value {} out of time_t range 0..8589934591", m.mtime.sec));
    // link target > 100
    let m = c.meta(root, b"sl_long");
    let e = w.append(b"sl_long", &m, None).unwrap_err();
    assert!(matches!(e, ArchiveError::LinkNameTooLong { .. }), "{e}");
    assert_eq!(e.to_string(), "sl_long: link name is too long; not dumped");
    // names: 257 bytes, and an unsplittable 156-byte name
    let mut m = c.meta(root, b"empty");
    m.kind = EntryKind::File;
    let long = [b"x/".repeat(128), b"y".to_vec()].concat();
    let e = w.append(&long, &m, None).unwrap_err();
    assert!(e.to_string().ends_with(": file name is too long (max 256); not dumped"), "{e}");
    let e = w.append(&[b'z'; 156], &m, None).unwrap_err();
    assert!(e.to_string().ends_with(": file name is too long (cannot be split); not dumped"), "{e}");
    if root_ok {
        let m = c.meta(root, b"bigid");
        let e = w.append(b"bigid", &m, None).unwrap_err();
        assert_eq!(e.to_string(), "bigid: value 3000000 out of uid_t range 0..2097151");
    }
    // Nothing was written by the refused appends: the archive is empty and valid.
    let bytes = w.finish().unwrap();
    assert!(bytes.iter().all(|&b| b == 0));
}

#[test]
fn v7_matches_gnu_tar() {
    let dir = tmpdir();
    let root = dir.path();
    let root_ok = require_root("device members");
    let mut names = build_tree(root, root_ok);
    names.retain(|n| n.len() < 100 && n != b"bigid" && n != b"b512" && n != b"sl_long" && n != b"fifo" && n != b"chr");
    let mine = ours(root, &names, WriteOptions::new(Format::V7)).0;
    let theirs = gnu(root, &names, &["--format=v7"]);
    assert_same_archive(&mine, &theirs, "v7");
}

/// GNU tar 1.34 turns `--xattrs` archives of any format into pax archives with
/// SCHILY.xattr records; so do we.
#[test]
fn xattrs_match_gnu_tar() {
    let dir = tmpdir();
    let root = dir.path();
    sh(&format!(
        "cd '{}'; printf data > f; setfattr -n user.foo -v bar f; setfattr -n user.b -v 'x y' f; mkdir d; setfattr -n user.dir -v 1 d",
        root.display()
    ));
    freeze_atimes(root);
    let names = vec![b"d".to_vec(), b"f".to_vec()];
    for (format, flag) in [
        (Format::Gnu, "--format=gnu"),
        (Format::Pax, "--format=pax"),
        (Format::Ustar, "--format=ustar"),
        (Format::V7, "--format=v7"),
        (Format::OldGnu, "--format=oldgnu"),
    ] {
        let mut opts = WriteOptions::new(format);
        opts.xattrs = true;
        let mine = ours(root, &names, opts).0;
        let theirs = gnu(root, &names, &[flag, "--xattrs"]);
        assert_same_archive(&mine, &theirs, flag);
        assert!(mine.windows(22).any(|w| w == b"SCHILY.xattr.user.foo="));
    }
}

/// A writer that keeps the first `keep` bytes and counts the rest.
struct Head {
    keep: usize,
    head: Vec<u8>,
    total: u64,
}

impl std::io::Write for Head {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        let room = self.keep.saturating_sub(self.head.len()).min(b.len());
        self.head.extend_from_slice(&b[..room]);
        self.total += b.len() as u64;
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Sizes of 8 GiB and more: base-256 in gnu, a `size` record in pax, an
/// error in ustar — header bytes equal to GNU tar's.
#[test]
fn huge_sizes_match_gnu_tar() {
    let dir = tmpdir();
    let root = dir.path();
    sh(&format!("cd '{}'; truncate -s 9G huge; touch -d @1600000000 huge", root.display()));
    freeze_atimes(root);
    for (format, flag, keep) in [(Format::Gnu, "--format=gnu", 512), (Format::Pax, "--format=pax", 1536)] {
        let mut c = Collector::new();
        let m = c.meta(root, b"huge");
        let mut w = ArchiveWriter::new(Head { keep, head: Vec::new(), total: 0 }, WriteOptions::new(format));
        // No data source: the writer zero-fills (reported as Shrank) without reading 9 GiB.
        let o = w.append(b"huge", &m, None).unwrap();
        assert_eq!(o, qtar_archive::AppendOutcome::Shrank { missing: 9 << 30 });
        let head = w.finish().unwrap();
        // headers + data + two zero blocks, padded to 10240-byte records.
        assert_eq!(head.total, (keep as u64 + (9u64 << 30) + 1024).div_ceil(10240) * 10240);
        let theirs = sh(&format!("tar {flag} -cf - -C '{}' huge | head -c {keep}", root.display()));
        assert_same_archive(&head.head, &theirs, flag);
    }
    let mut c = Collector::new();
    let m = c.meta(root, b"huge");
    let mut w = ArchiveWriter::new(Vec::new(), WriteOptions::new(Format::Ustar));
    let e = w.append(b"huge", &m, None).unwrap_err();
    assert_eq!(e.to_string(), "huge: value 9663676416 out of off_t range 0..8589934591");
}

/// `--owner=NAME:ID --group=NAME:ID --mtime=@T --numeric-owner` overrides.
#[test]
fn overrides_match_gnu_tar() {
    let dir = tmpdir();
    let root = dir.path();
    let names = build_tree(root, false);
    for (format, flag) in
        [(Format::Gnu, "--format=gnu"), (Format::Pax, "--format=pax"), (Format::Ustar, "--format=ustar")]
    {
        let names: Vec<Vec<u8>> = names
            .iter()
            .filter(|n| {
                format != Format::Ustar
                    || (n.as_slice() != b"b512"
                        && n.as_slice() != b"sl_long"
                        && n.rsplit(|&c| c == b'/').next().unwrap().len() <= 100)
            })
            .cloned()
            .collect();
        let mut opts = WriteOptions::new(format);
        opts.owner = Some((Some(b"alice".to_vec()), 1234));
        opts.group = Some((Some(b"staff".to_vec()), 99));
        opts.mtime = Some(qtar_archive::Timestamp::new(1234567890, 0));
        let mine = ours(root, &names, opts.clone()).0;
        let theirs = gnu(root, &names, &[flag, "--owner=alice:1234", "--group=staff:99", "--mtime=@1234567890"]);
        assert_same_archive(&mine, &theirs, flag);
        opts.numeric_owner = true;
        opts.owner = None;
        opts.group = None;
        opts.mtime = None;
        let mine = ours(root, &names, opts).0;
        let theirs = gnu(root, &names, &[flag, "--numeric-owner"]);
        assert_same_archive(&mine, &theirs, flag);
    }
}
