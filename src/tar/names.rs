//! User and group names, and exclusion patterns with GNU tar's defaults.

use std::collections::HashMap;

use globset::{GlobBuilder, GlobSet, GlobSetBuilder};

/// Caches passwd and group look-ups.
#[derive(Default)]
pub struct Owners {
    users: HashMap<u32, Option<Vec<u8>>>,
    groups: HashMap<u32, Option<Vec<u8>>>,
}

impl Owners {
    /// The user name of `uid`, if the passwd database has one.
    pub fn user(&mut self, uid: u32) -> Option<Vec<u8>> {
        self.users
            .entry(uid)
            .or_insert_with(|| {
                nix::unistd::User::from_uid(nix::unistd::Uid::from_raw(uid)).ok().flatten().map(|u| u.name.into_bytes())
            })
            .clone()
    }

    /// The group name of `gid`, if the group database has one.
    pub fn group(&mut self, gid: u32) -> Option<Vec<u8>> {
        self.groups
            .entry(gid)
            .or_insert_with(|| {
                nix::unistd::Group::from_gid(nix::unistd::Gid::from_raw(gid))
                    .ok()
                    .flatten()
                    .map(|g| g.name.into_bytes())
            })
            .clone()
    }
}

/// Parses `--owner`/`--group` values: `NAME`, `NAME:ID`, `:ID`, `ID` or `+ID`.
pub fn parse_owner(spec: &str, user: bool) -> Result<(Option<Vec<u8>>, u64), String> {
    let (name, id) = match spec.split_once(':') {
        Some((n, i)) => (n, Some(i)),
        None => (spec, None),
    };
    let parse_id = |s: &str| s.trim_start_matches('+').parse::<u64>().ok();
    if let Some(i) = id {
        let id = parse_id(i).ok_or_else(|| format!("{i}: Invalid {}", if user { "owner ID" } else { "group ID" }))?;
        return Ok(((!name.is_empty()).then(|| name.as_bytes().to_vec()), id));
    }
    let looked_up = if user {
        nix::unistd::User::from_name(name).ok().flatten().map(|u| u.uid.as_raw() as u64)
    } else {
        nix::unistd::Group::from_name(name).ok().flatten().map(|g| g.gid.as_raw() as u64)
    };
    match (looked_up, parse_id(name)) {
        (Some(id), _) if !name.starts_with('+') => Ok((Some(name.as_bytes().to_vec()), id)),
        (_, Some(id)) => {
            let mut o = Owners::default();
            let n = if user { o.user(id as u32) } else { o.group(id as u32) };
            Ok((n, id))
        }
        _ => Err(format!("{name}: Invalid {}", if user { "owner" } else { "group" })),
    }
}

/// Names `--exclude-vcs` skips (GNU tar 1.34's list).
pub const VCS_NAMES: &[&str] = &[
    "CVS",
    ".cvsignore",
    "RCS",
    "SCCS",
    ".git",
    ".gitignore",
    ".gitattributes",
    ".gitmodules",
    ".arch-ids",
    "{arch}",
    "=RELEASE-ID",
    "=meta-update",
    "=update",
    ".bzr",
    ".bzrignore",
    ".bzrtags",
    ".hg",
    ".hgignore",
    ".hgtags",
    "_darcs",
];

/// `--exclude` patterns with GNU's defaults for exclusion: wildcards that
/// match `/`, not anchored (a pattern may match any trailing run of path
/// components).
pub struct Excluder {
    set: GlobSet,
    vcs: bool,
}

impl Excluder {
    /// Builds the matcher; an invalid pattern is an error naming it.
    pub fn new(patterns: &[Vec<u8>], vcs: bool) -> Result<Self, String> {
        let mut b = GlobSetBuilder::new();
        for p in patterns {
            let s = String::from_utf8_lossy(p);
            let s = s.trim_end_matches('/');
            let g = GlobBuilder::new(s)
                .literal_separator(false)
                .backslash_escape(true)
                .build()
                .map_err(|e| format!("{s}: invalid pattern: {e}"))?;
            b.add(g);
        }
        Ok(Self { set: b.build().map_err(|e| e.to_string())?, vcs })
    }

    /// Whether the entry named `path` is excluded.
    pub fn excluded(&self, path: &[u8]) -> bool {
        let path = path.strip_suffix(b"/").unwrap_or(path);
        if self.vcs {
            let base = path.rsplit(|&b| b == b'/').next().unwrap_or(path);
            if VCS_NAMES.iter().any(|v| v.as_bytes() == base) {
                return true;
            }
        }
        if self.set.is_empty() {
            return false;
        }
        let mut start = 0;
        loop {
            let tail = &path[start..];
            if self.set.is_match(crate::tar::names::as_path(tail)) {
                return true;
            }
            match tail.iter().position(|&b| b == b'/') {
                Some(i) => start += i + 1,
                None => return false,
            }
        }
    }
}

pub(crate) fn as_path(b: &[u8]) -> &std::path::Path {
    qtar_engine::path_from_bytes(b)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exclusion_is_unanchored_and_matches_slashes() {
        let e = Excluder::new(&[b"*.o".to_vec(), b"b/c".to_vec(), b"./top".to_vec()], false).unwrap();
        assert!(e.excluded(b"a/x.o"));
        assert!(e.excluded(b"x.o"));
        assert!(e.excluded(b"a/b/c"));
        assert!(e.excluded(b"b/c"));
        assert!(!e.excluded(b"a/bb/c"));
        assert!(e.excluded(b"./top"));
        assert!(!e.excluded(b"a/x.c"));
        let v = Excluder::new(&[], true).unwrap();
        assert!(v.excluded(b"src/.git"));
        assert!(!v.excluded(b"src/.github"));
    }
}
