//! Sparse members (`-S`): byte comparison with GNU tar 1.34 in gnu and pax
//! format, an 8 GiB+ file, and holes surviving extraction by GNU tar.

mod common;

use std::path::Path;
use std::process::Command;

use common::*;
use qtar_archive::{Format, WriteOptions};

fn build(root: &Path) -> Vec<Vec<u8>> {
    sh(&format!(
        "cd '{}';
         head -c 4096 /dev/urandom > sp1; dd if=/dev/urandom of=sp1 bs=4096 seek=256 count=1 conv=notrunc 2>/dev/null; truncate -s 2M sp1;
         truncate -s 1M sp2; dd if=/dev/urandom of=sp2 bs=4096 seek=300 count=2 conv=notrunc 2>/dev/null;
         truncate -s 3M allhole;
         truncate -s 4M many; for i in $(seq 0 29); do dd if=/dev/urandom of=many bs=4096 seek=$((i*16)) count=1 conv=notrunc 2>/dev/null; done;
         head -c 10000 /dev/urandom > dense;
         touch -d @1600000000 sp1 sp2 allhole many dense",
        root.display()
    ));
    freeze_atimes(root);
    ["sp1", "sp2", "allhole", "many", "dense"].iter().map(|s| s.as_bytes().to_vec()).collect()
}

/// Replaces `GNUSparseFile.<pid>` (GNU puts its process id there) in header
/// name fields so archives from two processes compare; zeroes the checksum of
/// the rewritten headers.
fn normalize(mut a: Vec<u8>) -> Vec<u8> {
    for block in a.chunks_mut(512) {
        let name = &block[..100];
        if let Some(p) = name.windows(14).position(|w| w == b"GNUSparseFile.") {
            let start = p + 14;
            let end = start + name[start..].iter().position(|c| !c.is_ascii_digit()).unwrap();
            let mut n = block[..start].to_vec();
            n.push(b'P');
            n.extend_from_slice(&block[end..100]);
            n.resize(100, 0);
            block[..100].copy_from_slice(&n);
            block[148..156].fill(0);
        }
    }
    a
}

#[test]
fn sparse_members_match_gnu_tar() {
    let dir = tmpdir();
    let root = dir.path();
    let names = build(root);
    for (format, flag) in [(Format::Gnu, "--format=gnu"), (Format::Pax, "--format=pax")] {
        let mut opts = WriteOptions::new(format);
        opts.sparse = true;
        let mine = ours(root, &names, opts).0;
        let theirs = gnu(root, &names, &[flag, "-S"]);
        assert_same_archive(&normalize(mine), &normalize(theirs), flag);
        // Without -S holes are read as zeros: plain members, like GNU.
        let mine = ours(root, &names, WriteOptions::new(format)).0;
        let theirs = gnu(root, &names, &[flag]);
        assert_same_archive(&normalize(mine), &normalize(theirs), flag);
    }
}

fn allocated(p: &Path) -> u64 {
    let out = sh(&format!("du -B1 '{}' | cut -f1", p.display()));
    String::from_utf8(out).unwrap().trim().parse().unwrap()
}

/// A 9 GiB file with two 4 KiB data regions: the archive is small, GNU tar
/// extracts it with holes, the size is right and the data is where it was.
#[test]
fn nine_gib_sparse_file() {
    let dir = tmpdir();
    let root = dir.path();
    sh(&format!(
        "cd '{}'; truncate -s 9G big; printf 'start' | dd of=big bs=1 seek=$((5*1024*1024*1024)) conv=notrunc 2>/dev/null;
         printf 'end!' | dd of=big bs=1 seek=$((9*1024*1024*1024-4)) conv=notrunc 2>/dev/null",
        root.display()
    ));
    freeze_atimes(root);
    let names = vec![b"big".to_vec()];
    for (format, flag) in [(Format::Gnu, "--format=gnu"), (Format::Pax, "--format=pax")] {
        let mut opts = WriteOptions::new(format);
        opts.sparse = true;
        let mine = ours(root, &names, opts).0;
        assert!(mine.len() < 64 * 1024, "{flag}: archive of a 9 GiB sparse file is {} bytes", mine.len());
        let theirs = gnu(root, &names, &[flag, "-S"]);
        assert_same_archive(&normalize(mine.clone()), &normalize(theirs), flag);
        let out = tmpdir();
        std::fs::write(out.path().join("a.tar"), &mine).unwrap();
        run(Command::new("tar").arg("-xpf").arg(out.path().join("a.tar")).arg("-C").arg(out.path()));
        let big = out.path().join("big");
        assert_eq!(std::fs::metadata(&big).unwrap().len(), 9 << 30);
        assert!(allocated(&big) < 1 << 20, "{flag}: holes lost: {} bytes allocated", allocated(&big));
        let tail = sh(&format!("tail -c 4 '{}'", big.display()));
        assert_eq!(tail, b"end!");
        let mid = sh(&format!("dd if='{}' bs=1 skip=$((5*1024*1024*1024)) count=5 2>/dev/null", big.display()));
        assert_eq!(mid, b"start");
    }
}

/// Shrinking/growing files mid-archive keep the archive valid.
#[test]
fn shrink_and_grow_keep_archive_valid() {
    use qtar_archive::{AppendOutcome, ArchiveWriter, EntryKind, EntryMeta};
    let dir = tmpdir();
    let root = dir.path();
    std::fs::write(root.join("f"), vec![7u8; 10000]).unwrap();
    std::fs::write(root.join("after"), b"after").unwrap();
    let mut w = ArchiveWriter::new(Vec::new(), WriteOptions::new(Format::Gnu));
    let mut f = std::fs::File::open(root.join("f")).unwrap();
    let mut meta = EntryMeta::from_std(&f.metadata().unwrap(), EntryKind::File);
    meta.size = 20000; // the file "shrank" after stat
    assert_eq!(w.append(b"shrunk", &meta, Some(&mut f)).unwrap(), AppendOutcome::Shrank { missing: 10000 });
    let mut f = std::fs::File::open(root.join("f")).unwrap();
    meta.size = 5000; // the file "grew" after stat
    assert_eq!(w.append(b"grown", &meta, Some(&mut f)).unwrap(), AppendOutcome::Grew);
    let mut f = std::fs::File::open(root.join("after")).unwrap();
    let meta = EntryMeta::from_std(&f.metadata().unwrap(), EntryKind::File);
    assert_eq!(w.append(b"after", &meta, Some(&mut f)).unwrap(), AppendOutcome::Ok);
    // Sparse path: a shrink while reading regions.
    let bytes = w.finish().unwrap();
    let a = root.join("a.tar");
    std::fs::write(&a, &bytes).unwrap();
    let listing = run(Command::new("tar").arg("-tvf").arg(&a).env("TZ", "UTC"));
    let text = String::from_utf8(listing).unwrap();
    assert!(text.contains(" 20000 ") && text.contains(" 5000 ") && text.ends_with("after\n"), "{text}");
    let names = run(Command::new("bsdtar").arg("-tf").arg(&a));
    assert_eq!(names, b"shrunk\ngrown\nafter\n");
    let out = tmpdir();
    run(Command::new("tar").arg("-xf").arg(&a).arg("-C").arg(out.path()));
    let shrunk = std::fs::read(out.path().join("shrunk")).unwrap();
    assert_eq!(&shrunk[..10000], &[7u8; 10000][..]);
    assert!(shrunk[10000..].iter().all(|&b| b == 0) && shrunk.len() == 20000);
    assert_eq!(std::fs::read(out.path().join("grown")).unwrap(), vec![7u8; 5000]);
    assert_eq!(std::fs::read(out.path().join("after")).unwrap(), b"after");
}
