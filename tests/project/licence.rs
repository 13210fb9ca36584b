//! The licence the manifests declare is the one the repository ships: both texts at
//! the root, and `MIT OR Apache-2.0` in every crate's and wheel's manifest.

use std::path::{Path, PathBuf};

fn manifests(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        let name = entry.file_name().to_string_lossy().into_owned();
        if path.is_dir() {
            if !name.starts_with('.') && name != "target" && name != "node_modules" {
                manifests(&path, out);
            }
        } else if name == "Cargo.toml" || name == "pyproject.toml" {
            out.push(path);
        }
    }
}

#[test]
fn every_manifest_names_the_licence_the_repository_ships() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let mit = std::fs::read_to_string(root.join("LICENSE-MIT")).unwrap();
    assert!(mit.contains("Permission is hereby granted, free of charge"));
    let apache = std::fs::read_to_string(root.join("LICENSE-APACHE")).unwrap();
    assert!(apache.contains("Apache License") && apache.contains("Version 2.0, January 2004"));
    let mut found = Vec::new();
    manifests(&root, &mut found);
    assert!(found.len() >= 13, "{found:?}");
    for path in found {
        let text = std::fs::read_to_string(&path).unwrap();
        // The workspace root declares it; members inherit it or say it.
        let ok = text.contains("license = \"MIT OR Apache-2.0\"")
            || text.contains("license.workspace = true");
        assert!(ok, "{} names no licence", path.display());
    }
}
