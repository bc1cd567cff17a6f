//! Root-only: the requests captured while reading a file with O_DIRECT on a
//! loop-mounted ext4 image are exactly the file's FIEMAP physical extents.

use std::io::Write;
use std::process::Command;

use qlab::layout::filefrag;
use qlab::model::merged;
use qlab::sys::{Loop, Mount, drop_caches, mkfs_ext4, require_root, run};
use qlab::trace::EventKind;
use qlab::tracefs::{CaptureOptions, capture, device_numbers};

#[test]
fn captured_sectors_match_fiemap() {
    if !require_root("captured_sectors_match_fiemap") {
        return;
    }
    let tmp = tempfile::Builder::new().prefix("qlab-trace-").tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let img = tmp.path().join("t.img");
    mkfs_ext4(&img, 256 << 20, &["-b", "4096"]).unwrap();
    let mnt = tmp.path().join("mnt");
    {
        // Write two files in interleaved, synced chunks so the target file
        // gets several extents.
        let lp = Loop::attach(&img, false).unwrap();
        let m = Mount::new(&lp.dev, &mnt, Some("ext4"), "").unwrap();
        let mut a = std::fs::File::create(mnt.join("target")).unwrap();
        let mut b = std::fs::File::create(mnt.join("other")).unwrap();
        let mut x: u64 = 0x9e3779b97f4a7c15;
        for i in 0..24 {
            let chunk: Vec<u8> = (0..(256 << 10))
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    x as u8
                })
                .collect();
            a.write_all(&chunk).unwrap();
            a.sync_all().unwrap();
            if i % 2 == 0 {
                b.write_all(&chunk[..64 << 10]).unwrap();
                b.sync_all().unwrap();
            }
        }
        drop((a, b));
        m.unmount().unwrap();
    }
    let lp = Loop::attach(&img, true).unwrap();
    let m = Mount::new(&lp.dev, &mnt, Some("ext4"), "ro,noload").unwrap();
    let file = mnt.join("target");
    let maps = filefrag(std::slice::from_ref(&file)).unwrap();
    let fiemap: Vec<(u64, u64)> = maps[0].extents.iter().map(|e| (e.physical / 512, e.len / 512)).collect();
    assert_eq!(fiemap.iter().map(|e| e.1).sum::<u64>(), 24 * 512);
    drop_caches().unwrap();
    let dev = device_numbers(&lp.dev).unwrap();
    let ((), _text, reqs) = capture(dev, &CaptureOptions::default(), || {
        run(Command::new("dd").arg(format!("if={}", file.display())).args(["of=/dev/null", "bs=1M", "iflag=direct"]))
            .unwrap();
    })
    .unwrap();
    assert!(reqs.iter().all(|r| r.dev == dev), "filter let other devices through");
    let data: Vec<(u64, u64)> = reqs
        .iter()
        .filter(|r| r.kind == EventKind::Issue && r.comm == "dd" && r.is_read() && !r.rwbs.contains('M'))
        .map(|r| (r.sector, r.sectors))
        .collect();
    assert!(!data.is_empty(), "no data reads captured");
    assert_eq!(merged(&data), merged(&fiemap), "captured reads differ from FIEMAP");
    let completes = reqs.iter().filter(|r| r.kind == EventKind::Complete).count();
    assert!(completes >= data.len(), "missing completions");
    m.unmount().unwrap();
}
