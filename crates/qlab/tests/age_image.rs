//! Root-only: aging a real loop-mounted ext4 image lays the tree down intact
//! (byte for byte) and leaves it more fragmented than a fresh copy.

use std::path::{Path, PathBuf};
use std::process::Command;

use qlab::age::{self, AgeParams, TreeItem};
use qlab::layout::{filefrag, layout_stats};
use qlab::sys::{Loop, Mount, fs_capacity, mkfs_ext4, require_root, run};
use qlab::tree;

fn files_under(dir: &Path) -> Vec<PathBuf> {
    walkdir::WalkDir::new(dir)
        .sort_by_file_name()
        .into_iter()
        .map(|e| e.unwrap())
        .filter(|e| e.file_type().is_file())
        .map(|e| e.into_path())
        .collect()
}

#[test]
fn aged_tree_is_intact_and_more_fragmented_than_clean() {
    if !require_root("aged_tree_is_intact_and_more_fragmented_than_clean") {
        return;
    }
    let tmp = tempfile::Builder::new().prefix("qlab-age-").tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let src = tmp.path().join("src");
    std::fs::create_dir(&src).unwrap();
    let plan = tree::synthetic(3, 400, 12 << 20);
    tree::write_tree(&plan, &src).unwrap();

    let stats = |img: &Path, age_it: bool| {
        mkfs_ext4(img, 96 << 20, &["-b", "4096"]).unwrap();
        let lp = Loop::attach(img, false).unwrap();
        let mnt = img.with_extension("mnt");
        let m = Mount::new(&lp.dev, &mnt, Some("ext4"), "").unwrap();
        if age_it {
            let items: Vec<TreeItem> = plan
                .files
                .iter()
                .map(|f| TreeItem { rel: f.path.clone(), size: f.size, src: Some(src.join(&f.path)) })
                .collect();
            let mut p = AgeParams::new(77, fs_capacity(&mnt).unwrap());
            p.churn_factor = 1.5;
            let sizes: Vec<u64> = items.iter().map(|i| i.size).collect();
            let (ops, _) = age::plan(&p, &sizes).unwrap();
            age::execute(&p, &ops, &mnt, Path::new("tree"), &plan.dirs, &items).unwrap();
            assert!(mnt.join("churn").is_dir());
        } else {
            run(Command::new("cp").arg("-a").arg(&src).arg(mnt.join("tree"))).unwrap();
        }
        // Byte-for-byte the same tree.
        run(Command::new("diff").arg("-r").arg(&src).arg(mnt.join("tree"))).unwrap();
        let s = layout_stats(&filefrag(&files_under(&mnt.join("tree"))).unwrap());
        m.unmount().unwrap();
        s
    };
    let clean = stats(&tmp.path().join("clean.img"), false);
    let aged = stats(&tmp.path().join("aged.img"), true);
    assert_eq!(clean.files, 400);
    assert_eq!(aged.files, 400);
    assert!(
        aged.layout_score < clean.layout_score || aged.interfile_contiguity < clean.interfile_contiguity,
        "aging left the layout as good as a fresh copy: {aged:?} vs {clean:?}"
    );
    assert!(aged.interfile_contiguity < 0.8 * clean.interfile_contiguity, "{aged:?} vs {clean:?}");
}
