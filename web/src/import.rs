//! Import of the original CCM file layout: sorts the files a person picked into the parts
//! the converter (ccm-import) expects; the store imports them (`BrowserStore::import_ccm_files`).

use ccm_import::CcmFiles;

/// A file a person picked: its path as the browser reports it, and its text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PickedFile {
    /// `manifest.yaml`, `efforts/auth-bug.jsonl`, or a folder-relative path.
    pub path: String,
    /// The file's text.
    pub text: String,
}

/// The files of one CCM session, sorted.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CcmFileSet {
    /// `manifest.yaml`.
    pub manifest: String,
    /// `raw.jsonl`.
    pub raw: Option<String>,
    /// `efforts/<id>.jsonl` as `(id, text)`.
    pub efforts: Vec<(String, String)>,
    /// `session_state.json`.
    pub session_state: Option<String>,
}

fn file_name(path: &str) -> &str {
    path.rsplit(['/', '\\']).next().unwrap_or(path)
}

/// Sorts picked files into a CCM file set: `manifest.yaml`, `raw.jsonl`,
/// `session_state.json`, and every other `.jsonl` file as an effort log named by its stem.
/// Other files are ignored and listed in the returned notes.
///
/// # Errors
/// A sentence for the person when no `manifest.yaml` is among the files.
pub fn sort_files(files: &[PickedFile]) -> Result<(CcmFileSet, Vec<String>), String> {
    let mut set = CcmFileSet::default();
    let mut manifest = None;
    let mut notes = Vec::new();
    for file in files {
        let name = file_name(&file.path);
        match name {
            "manifest.yaml" | "manifest.yml" => manifest = Some(file.text.clone()),
            "raw.jsonl" => set.raw = Some(file.text.clone()),
            "session_state.json" => set.session_state = Some(file.text.clone()),
            _ => match name.strip_suffix(".jsonl") {
                Some(stem) if !stem.is_empty() => {
                    set.efforts.push((stem.to_string(), file.text.clone()))
                }
                _ => notes.push(format!(
                    "{} is not part of the CCM layout and was skipped.",
                    file.path
                )),
            },
        }
    }
    set.manifest = manifest.ok_or_else(|| {
        "No manifest.yaml among the chosen files: pick the session's manifest.yaml, raw.jsonl and efforts/*.jsonl (or its whole folder).".to_string()
    })?;
    set.efforts.sort();
    Ok((set, notes))
}

impl CcmFileSet {
    /// The files as the converter reads them.
    pub fn files(&self) -> CcmFiles<'_> {
        CcmFiles {
            manifest_yaml: &self.manifest,
            raw_jsonl: self.raw.as_deref().unwrap_or(""),
            effort_logs: self
                .efforts
                .iter()
                .map(|(id, text)| (id.as_str(), text.as_str()))
                .collect(),
            session_state_json: self.session_state.as_deref(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(path: &str, text: &str) -> PickedFile {
        PickedFile {
            path: path.into(),
            text: text.into(),
        }
    }

    #[test]
    fn files_are_sorted_by_name() {
        let (set, notes) = sort_files(&[
            file("session/efforts/auth-bug.jsonl", "A"),
            file("session/manifest.yaml", "M"),
            file("session/raw.jsonl", "R"),
            file("session/notes.txt", "N"),
            file("session/efforts/billing.jsonl", "B"),
        ])
        .unwrap();
        assert_eq!(set.manifest, "M");
        assert_eq!(set.raw.as_deref(), Some("R"));
        assert_eq!(
            set.efforts,
            vec![
                ("auth-bug".into(), "A".into()),
                ("billing".into(), "B".into())
            ]
        );
        assert_eq!(notes.len(), 1);
    }

    #[test]
    fn a_manifest_is_required() {
        let error = sort_files(&[file("raw.jsonl", "")]).unwrap_err();
        assert!(error.contains("manifest.yaml"), "{error}");
    }
}
