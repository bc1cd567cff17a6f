//! Corrupted archives: the reader, `list` and `extract` never panic, and
//! extraction of a mutated archive never touches anything outside `dest`.

mod common;

use common::*;
use proptest::prelude::*;
use qtar_archive::{ArchiveError, ExtractOptions, Format, WriteOptions, extract, list};

fn sample() -> Vec<u8> {
    let src = tmpdir();
    let names = build_tree(src.path(), false);
    sh(&format!(
        "cd '{}'; truncate -s 1M sp; printf x | dd of=sp bs=1 seek=500000 conv=notrunc 2>/dev/null",
        src.path().display()
    ));
    let mut all = names.clone();
    all.push(b"sp".to_vec());
    let mut opts = WriteOptions::new(Format::Pax);
    opts.sparse = true;
    let mut a = ours(src.path(), &all, opts).0;
    // Drop the record padding so mutations hit headers and data more often.
    while a.len() > 512 && a[a.len() - 512..].iter().all(|&b| b == 0) {
        a.truncate(a.len() - 512);
    }
    let mut opts = WriteOptions::new(Format::Gnu);
    opts.sparse = true;
    a.extend(ours(src.path(), &all, opts).0);
    a
}

#[test]
fn garbage_is_reported_not_panicked() {
    let mut out = Vec::new();
    let e = list(&[7u8; 1024][..], 1, false, &mut out).unwrap_err();
    assert!(matches!(e, ArchiveError::Corrupt { offset: 0, .. }), "{e}");
    assert_eq!(e.to_string(), "archive at byte 0: This does not look like a tar archive");
    let a = sample();
    let e = list(&a[..1000], 0, false, &mut out).unwrap_err();
    assert!(e.to_string().contains("Unexpected EOF in archive"), "{e}");
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn mutated_archives_are_safe(edits in proptest::collection::vec((0usize..1_000_000, any::<u8>()), 1..12), cut in 0usize..1_000_000) {
        thread_local!(static SAMPLE: Vec<u8> = sample());
        let mut a = SAMPLE.with(|s| s.clone());
        for (pos, byte) in edits {
            let i = pos % a.len();
            a[i] = byte;
        }
        if cut % 3 == 0 {
            let n = cut % a.len();
            a.truncate(n);
        }
        let mut out = Vec::new();
        let _ = list(&a[..], 1, false, &mut out);
        let base = tmpdir();
        let dest = base.path().join("dest");
        std::fs::create_dir(&dest).unwrap();
        let _ = extract(&a[..], &dest, ExtractOptions::default());
        let entries: Vec<_> = std::fs::read_dir(base.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
        prop_assert_eq!(entries, vec![std::ffi::OsString::from("dest")]);
    }
}
