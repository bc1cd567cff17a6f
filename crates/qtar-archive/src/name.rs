//! Member-name sanitising like GNU tar's `safer_name_suffix`.

/// Turns a path given on the command line into a member name the way GNU tar
/// 1.34 does without `-P`: removes leading `/` and every leading component
/// sequence ending in `..`, returning the warning GNU prints, e.g.
/// ``Removing leading `/' from member names``. An empty result becomes `.`.
pub fn member_name(path: &[u8]) -> (Vec<u8>, Option<String>) {
    let prefix_len = unsafe_prefix_len(path);
    let rest = &path[prefix_len..];
    let warning = (prefix_len > 0)
        .then(|| format!("Removing leading `{}' from member names", String::from_utf8_lossy(&path[..prefix_len])));
    let name = if rest.is_empty() { b".".to_vec() } else { rest.to_vec() };
    (name, warning)
}

/// Length of the prefix GNU's `safer_name_suffix` strips: everything up to and
/// including the last `..` component, then any slashes.
pub(crate) fn unsafe_prefix_len(name: &[u8]) -> usize {
    let mut prefix = 0;
    let mut p = 0;
    while p < name.len() {
        if name[p] == b'.'
            && name.get(p + 1) == Some(&b'.')
            && (name.get(p + 2).is_none() || name.get(p + 2) == Some(&b'/'))
        {
            prefix = p + 2;
        }
        // Advance past the current component and its slash.
        loop {
            let c = name[p];
            p += 1;
            if c == b'/' || p >= name.len() {
                break;
            }
        }
    }
    let mut q = prefix;
    while q < name.len() && name[q] == b'/' {
        q += 1;
    }
    q
}

/// True if any component of `name` is `..`.
#[allow(dead_code)]
pub(crate) fn contains_dot_dot(name: &[u8]) -> bool {
    name.split(|&c| c == b'/').any(|c| c == b"..")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strips_like_gnu() {
        assert_eq!(
            member_name(b"/etc/passwd"),
            (b"etc/passwd".to_vec(), Some("Removing leading `/' from member names".into()))
        );
        assert_eq!(member_name(b"../a").0, b"a");
        assert_eq!(member_name(b"../a").1.unwrap(), "Removing leading `../' from member names");
        assert_eq!(member_name(b"a/../b").0, b"b");
        assert_eq!(member_name(b"a/..b").0, b"a/..b");
        assert_eq!(member_name(b"..").0, b".");
        assert_eq!(member_name(b"//x/y").0, b"x/y");
        assert_eq!(member_name(b"x/y"), (b"x/y".to_vec(), None));
        assert!(contains_dot_dot(b"a/../b"));
        assert!(!contains_dot_dot(b"a/..b"));
    }
}
