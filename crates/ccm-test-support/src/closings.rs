//! The closing conversations of `data/closings.txt`, read for the summary tests of ccm-text,
//! ccm-core and the offline demo model, so all three are held to the same cases.

/// One conversation that ends an effort, with what its summary must and must not say.
#[derive(Debug, Clone)]
pub struct ClosingCase {
    /// The effort's name.
    pub name: String,
    /// The messages in order: `true` for the person's, `false` for the assistant's.
    pub messages: Vec<(bool, String)>,
    /// Words of the outcome: the summary must contain each.
    pub outcome: Vec<String>,
    /// Words of the problem, kept when there is room.
    pub problem: Vec<String>,
    /// Words of values replaced later: the summary must not contain them.
    pub replaced: Vec<String>,
}

impl ClosingCase {
    /// The case as turns: one per message of the person, answered by the assistant's message
    /// after it, or by `reply` where the assistant said nothing before the person spoke again.
    pub fn turns<'a>(&'a self, reply: &'a str) -> Vec<(&'a str, &'a str)> {
        let mut turns: Vec<(&str, &str)> = Vec::new();
        for (person, text) in &self.messages {
            match (person, turns.last_mut()) {
                (false, Some(turn)) => turn.1 = text,
                _ => turns.push((text, reply)),
            }
        }
        turns
    }

    /// The person's messages alone.
    pub fn person_messages(&self) -> Vec<&str> {
        self.messages
            .iter()
            .filter(|(person, _)| *person)
            .map(|(_, text)| text.as_str())
            .collect()
    }

    /// What is wrong with `summary` for this case, if anything.
    pub fn check(&self, summary: &str) -> Result<(), String> {
        let lower = summary.to_lowercase();
        let missing: Vec<&String> = self
            .outcome
            .iter()
            .chain(&self.problem)
            .filter(|w| !lower.contains(w.as_str()))
            .collect();
        let stale: Vec<&String> = self
            .replaced
            .iter()
            .filter(|w| lower.contains(w.as_str()))
            .collect();
        if missing.is_empty() && stale.is_empty() {
            Ok(())
        } else {
            Err(format!(
                "{}: missing {missing:?}, replaced values kept {stale:?} in {summary:?}",
                self.name
            ))
        }
    }
}

/// Discussion that pads a case after its first message, so that the summary's word budget
/// cannot hold everything and must choose: the person's and the assistant's long, general
/// messages, whose words recur and would win a choice by frequency alone.
const PADDING: [(bool, &str); 4] = [
    (
        false,
        "There are a few usual suspects here, and measuring each of them separately will tell \
         us which one matters most before we change anything, since changing course later \
         would cost us more time than a careful look now.",
    ),
    (
        true,
        "I looked at it again this morning and wrote down what I saw, but I am not sure yet \
         which of the options matters most, so let us look at them one at a time.",
    ),
    (
        false,
        "That makes sense: one option at a time, measured the same way each time, so that we \
         can compare them fairly and see which option matters most in the end.",
    ),
    (
        true,
        "Fine, I will keep measuring each option the same way and write down what changes.",
    ),
];

impl ClosingCase {
    /// The case with [`PADDING`] after its first message: a long discussion between the
    /// problem and its outcome.
    pub fn padded(&self) -> ClosingCase {
        let mut padded = self.clone();
        padded.messages.splice(
            1..1,
            PADDING
                .iter()
                .map(|(person, text)| (*person, text.to_string())),
        );
        padded
    }
}

/// Every case of the data file, each as written and then padded: the set every summary test
/// checks.
pub fn every_case_as_written_and_padded() -> Vec<ClosingCase> {
    closing_cases()
        .into_iter()
        .flat_map(|case| [case.padded(), case])
        .collect()
}

/// Every case as written and padded, and the failures of `summarize` among them; a case it
/// answers `None` for is counted but not checked.
pub fn failures(summarize: impl Fn(&ClosingCase) -> Option<String>) -> (usize, Vec<String>) {
    let cases = every_case_as_written_and_padded();
    let failed = cases
        .iter()
        .filter_map(|case| summarize(case).and_then(|summary| case.check(&summary).err()))
        .collect();
    (cases.len(), failed)
}

/// Fails with every failed case, one a line, unless there is none.
pub fn assert_none_failed((total, failed): (usize, Vec<String>)) {
    assert!(
        failed.is_empty(),
        "{} of {total} cases failed:\n{}",
        failed.len(),
        failed.join("\n")
    );
}

/// Every case of the data file.
pub fn closing_cases() -> Vec<ClosingCase> {
    let mut cases: Vec<ClosingCase> = Vec::new();
    for line in include_str!("../data/closings.txt").lines() {
        let line = line.trim_end();
        let words = |rest: &str| -> Vec<String> {
            rest.split_whitespace().map(str::to_lowercase).collect()
        };
        if let Some(name) = line.strip_prefix("name: ") {
            cases.push(ClosingCase {
                name: name.to_string(),
                messages: Vec::new(),
                outcome: Vec::new(),
                problem: Vec::new(),
                replaced: Vec::new(),
            });
            continue;
        }
        let Some(case) = cases.last_mut() else {
            continue;
        };
        if let Some(text) = line.strip_prefix("> ") {
            case.messages.push((true, text.to_string()));
        } else if let Some(text) = line.strip_prefix("< ") {
            case.messages.push((false, text.to_string()));
        } else if let Some(rest) = line.strip_prefix("= ") {
            case.outcome = words(rest);
        } else if let Some(rest) = line.strip_prefix("+ ") {
            case.problem = words(rest);
        } else if let Some(rest) = line.strip_prefix("! ") {
            case.replaced = words(rest);
        }
    }
    assert!(cases
        .iter()
        .all(|c| !c.outcome.is_empty() && !c.messages.is_empty()));
    cases
}
