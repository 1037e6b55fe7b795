//! What the person's message asks for, read from patterns of ordinary phrasing. Deterministic
//! and small on purpose: the offline model demonstrates the tools, it does not understand
//! language, but it should follow the ways people usually say they start, continue, finish or
//! ask about a piece of work.
//!
//! A message is cut into clauses (at sentence ends, commas, colons, dashes and "but"), and
//! contractions are spelled out ("isn't" → "is not", "party's" → "party is"), so that each
//! pattern is a short sequence of words and a negation ("not", "never", "no") earlier in the
//! same clause cancels it. Questions ask about a state ("is it done?") and change nothing,
//! unless they are requests ("can you close this?"). Statements of what will or might happen
//! ("it should be fixed by Friday", "once it's done") are not statements of what happened.
//!
//! People write fast: chat shorthand is spelled out ("wanna", "bday", "its fixed"), and a slip
//! of the keyboard in a word the readings hang on ("fixd", "hlep", "happend") is read as the
//! word meant. Notes leave the subject out ("finished the shed", "working on my running
//! plan"), and that reads as "I". When no pattern reads new work, a message that asks for help
//! or states an intention still names it ([`new_work`]).

use serde::Serialize;
use std::collections::BTreeSet;

/// One thing a message asks for. A message can ask for several ("that's resolved — let's work
/// on the export next"); [`detect_intents`] returns them in the order the model acts on them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "intent", rename_all = "snake_case")]
pub enum Intent {
    /// "we're done", "party's sorted", "splitting the bundle fixed it": conclude an effort.
    Close {
        /// The words that say what is done: the subject or object of the clause when it is a
        /// noun of its own ("the login page"), else the whole message, whose content words can
        /// still point at an effort other than the active one.
        mention: String,
        /// Whether `mention` is a noun of its own ("the receipts are sorted"), which must name
        /// an open effort for the message to conclude anything; otherwise what is done is
        /// "it", "that one", "everything" or left unsaid, which means the active effort.
        specific: bool,
    },
    /// "back to …", "switch to …", "about the … again": make another effort active (or reopen
    /// a concluded one).
    Switch {
        /// The words after the phrase.
        target: String,
        /// Whether the phrase can only mean a switch ("switch to", "go back to"). Softer cues
        /// ("pick up …", "resume …", "re the …") switch only when they name an effort.
        explicit: bool,
    },
    /// "let's work on …", "I'm trying to figure out why …": start an effort.
    Open {
        /// The effort's name, taken from the words after the phrase.
        name: String,
        /// Whether the person asked for the work by name ("let's work on …", "new task: …").
        /// Work that is only described ("we need to fix …", "I'm trying to …") and is already
        /// what an open effort is about continues that effort instead.
        explicit: bool,
    },
    /// "got it", "that's enough": the person is done reviewing expanded efforts.
    Collapse,
    /// A question about earlier work ("remind me…", "what did we decide about…").
    Recall {
        /// The message, to match against summaries or to search with.
        query: String,
        /// Whether it asks for details a summary cannot give ("exactly", "details"), which
        /// calls for expanding the effort's full log.
        details: bool,
    },
    /// "status", "what are we working on": list the efforts.
    Status,
    /// "help", "what is CCM?", "what can you do?": explain CCM and what to try.
    Help,
}

/// Words that cancel what follows them in the same clause.
const NEGATORS: [&str; 10] = [
    "not", "no", "never", "nothing", "nobody", "neither", "nor", "without", "hardly", "barely",
];

/// Words after "no" that make it an idiom rather than a negation ("no worries, it's fixed").
const NO_IDIOMS: [&str; 5] = ["worries", "problem", "problems", "rush", "doubt"];

/// Words that put what follows in the future, a wish, a condition or a doubt: "it should be
/// fixed", "once it's done", "almost finished", "I hope it's sorted".
const IRREALIS: [&str; 41] = [
    "will",
    "would",
    "should",
    "could",
    "might",
    "may",
    "must",
    "shall",
    "need",
    "needs",
    "needed",
    "want",
    "wants",
    "wanted",
    "hope",
    "hoping",
    "hopefully",
    "almost",
    "nearly",
    "soon",
    "until",
    "till",
    "if",
    "when",
    "once",
    "whether",
    "unless",
    "going",
    "gonna",
    "supposed",
    "trying",
    "try",
    "expect",
    "expected",
    "wish",
    "probably",
    "maybe",
    "partly",
    "partially",
    "mostly",
    "half",
];

/// Words that mean something is finished whatever it is: with "it", "that one" or no subject
/// at all they conclude the active effort.
const DONE_WORDS: [&str; 19] = [
    "done",
    "fixed",
    "solved",
    "resolved",
    "sorted",
    "finished",
    "complete",
    "completed",
    "settled",
    "handled",
    "closed",
    "concluded",
    "over",
    "nailed",
    "cracked",
    "working",
    "finalized",
    "squashed",
    "success",
];

/// Two-word forms of [`DONE_WORDS`] ("sorted out", "taken care of" is matched by its start).
const DONE_PAIRS: [[&str; 2]; 11] = [
    ["sorted", "out"],
    ["wrapped", "up"],
    ["taken", "care"],
    ["dealt", "with"],
    ["squared", "away"],
    ["all", "set"],
    ["figured", "out"],
    ["worked", "out"],
    ["ironed", "out"],
    ["buttoned", "up"],
    ["good", "to"],
];

/// Past participles that finish a particular kind of work ("the venue is booked", "the fix is
/// merged"). They conclude an effort only when their subject names it: "it's booked" alone is
/// more often one step of a larger piece of work.
const DOMAIN_DONE_WORDS: [&str; 39] = [
    "ready",
    "built",
    "painted",
    "repaired",
    "sold",
    "hired",
    "cleaned",
    "booked",
    "shipped",
    "merged",
    "deployed",
    "released",
    "filed",
    "submitted",
    "sent",
    "paid",
    "published",
    "launched",
    "delivered",
    "signed",
    "approved",
    "ordered",
    "bought",
    "organized",
    "organised",
    "arranged",
    "planned",
    "scheduled",
    "finalised",
    "confirmed",
    "live",
    "installed",
    "migrated",
    "written",
    "drafted",
    "reserved",
    "renewed",
    "uploaded",
    "accepted",
];

/// Verbs in the past whose object is what was finished: "splitting the bundle fixed it", "we
/// finally cracked the login bug".
const DONE_VERBS: [&str; 16] = [
    "wrapped",
    "fixed",
    "solved",
    "resolved",
    "sorted",
    "finished",
    "completed",
    "cracked",
    "nailed",
    "closed",
    "settled",
    "handled",
    "shipped",
    "merged",
    "finalized",
    "finalised",
];

/// Words that may stand around a completion word in a clause that says nothing else ("ok, all
/// done now", "so that one is fixed", "we are done here, thanks").
const BARE_FILLERS: [&str; 62] = [
    "ok",
    "okay",
    "alright",
    "right",
    "yes",
    "yeah",
    "yep",
    "yup",
    "great",
    "cool",
    "good",
    "nice",
    "perfect",
    "awesome",
    "excellent",
    "sweet",
    "brilliant",
    "and",
    "so",
    "well",
    "now",
    "then",
    "finally",
    "at",
    "last",
    "thanks",
    "thank",
    "you",
    "all",
    "it",
    "that",
    "this",
    "one",
    "is",
    "are",
    "was",
    "has",
    "have",
    "been",
    "we",
    "i",
    "am",
    "everything",
    "totally",
    "completely",
    "officially",
    "fully",
    "pretty",
    "much",
    "basically",
    "just",
    "oh",
    "phew",
    "yay",
    "here",
    "there",
    "too",
    "already",
    "really",
    "properly",
    "both",
    "think",
];

/// Generic subjects or objects: "it", "that one", "the problem". What they stand for is the
/// effort being worked on.
const GENERIC_NOUNS: [&str; 28] = [
    "fix",
    "solution",
    "patch",
    "it",
    "that",
    "this",
    "one",
    "everything",
    "all",
    "we",
    "i",
    "stuff",
    "thing",
    "things",
    "problem",
    "issue",
    "bug",
    "task",
    "work",
    "effort",
    "job",
    "part",
    "them",
    "those",
    "these",
    "both",
    "whole",
    "ticket",
];

/// Words that may stand before a copula without changing who is spoken of ("the", "our", "I
/// think", "looks like").
const SUBJECT_FILLERS: [&str; 30] = [
    "the", "a", "an", "our", "my", "your", "their", "its", "so", "ok", "okay", "and", "well",
    "now", "yeah", "great", "good", "news", "i", "think", "guess", "believe", "looks", "like",
    "seems", "finally", "anyway", "also", "then", "oh",
];

/// Clauses that conclude by themselves when nothing but fillers surrounds them ("it works
/// now!"); with more words around them they often describe rather than conclude ("it works
/// like this").
const DONE_CLAUSES: [&[&str]; 11] = [
    &["it", "worked"],
    &["fix", "worked"],
    &["fix", "works"],
    &["done", "and", "dusted"],
    &["it", "works"],
    &["that", "worked"],
    &["nailed", "it"],
    &["all", "good"],
    &["that", "is", "a", "wrap"],
    &["that", "is", "it"],
    &["that", "is", "that"],
];

/// Phrases that conclude wherever they stand in a clause ("lazy-loading the images did the
/// trick", "that's everything for the tax return").
const DONE_ANYWHERE: [&[&str]; 23] = [
    &["got", "it", "fixed"],
    &["got", "it", "sorted"],
    &["got", "it", "done"],
    &["got", "it", "solved"],
    &["and", "it", "works"],
    &["and", "it", "worked"],
    &["got", "it", "working"],
    &["got", "it", "to", "work"],
    &["works", "now"],
    &["working", "now"],
    &["works", "again"],
    &["working", "again"],
    &["works", "fine", "now"],
    &["did", "the", "trick"],
    &["that", "did", "it"],
    &["problem", "solved"],
    &["issue", "solved"],
    &["case", "closed"],
    &["mission", "accomplished"],
    &["that", "is", "everything"],
    &["we", "can", "close"],
    &["that", "wraps"],
    &["that", "is", "a", "wrap"],
];

/// Verbs that ask for an effort to be concluded ("close this", "let's wrap up the export").
const CLOSE_VERBS: [&str; 11] = [
    "close",
    "closing",
    "conclude",
    "concluding",
    "wrap",
    "mark",
    "call",
    "calling",
    "consider",
    "considering",
    "finish",
];

/// Openings before a closing verb that keep it a request ("please close it", "you can close
/// this now", "let's wrap up").
const REQUEST_PREFIXES: [&[&str]; 24] = [
    &["i", "am"],
    &["we", "are"],
    &["please"],
    &["ok"],
    &["okay"],
    &["so"],
    &["now"],
    &["then"],
    &["let", "us"],
    &["we", "can"],
    &["you", "can"],
    &["can", "you"],
    &["could", "you"],
    &["can", "we"],
    &["could", "we"],
    &["would", "you"],
    &["go", "ahead", "and"],
    &["feel", "free", "to"],
    &["i", "think", "we", "can"],
    &["time", "to"],
    &["we", "should"],
    &["i", "want", "to"],
    &["i", "would", "like", "to"],
    &["just"],
];

/// Labels that name new work directly ("new task: hiring plan").
const LABELS: [&[&str]; 12] = [
    &["new", "thing"],
    &["another", "thing"],
    &["another", "topic"],
    &["different", "topic"],
    &["new", "issue"],
    &["new", "effort"],
    &["new", "task"],
    &["new", "topic"],
    &["new", "project"],
    &["next", "up"],
    &["next", "topic"],
    &["new", "problem"],
];

/// Phrases after which the named work is asked for directly.
const EXPLICIT_OPENERS: [&[&str]; 27] = [
    &["starting", "on"],
    &["starting", "work", "on"],
    &["kicking", "off"],
    &["let", "us", "get", "started", "on"],
    &["let", "us", "get", "started", "with"],
    &["let", "us", "get", "going", "on"],
    &["let", "us", "begin", "with"],
    &["let", "us", "kick", "off"],
    &["let", "us", "move", "on", "to"],
    &["let", "us", "dive", "into"],
    &["let", "us", "turn", "to"],
    &["let", "us", "work", "on"],
    &["let", "us", "start", "on"],
    &["let", "us", "start", "with"],
    &["let", "us", "tackle"],
    &["let", "us", "look", "into"],
    &["let", "us", "dig", "into"],
    &["let", "us", "talk", "about"],
    &["let", "us", "focus", "on"],
    &["help", "me", "with"],
    &["help", "us", "with"],
    &["i", "need", "help", "with"],
    &["we", "need", "help", "with"],
    &["start", "working", "on"],
    &["start", "an", "effort", "for"],
    &["open", "an", "effort", "for"],
    &["i", "want", "to", "work", "on"],
];

/// First-person statements of a problem or an undertaking, followed by what it is about ("I'm
/// trying to figure out why…", "we have a problem with…", "I'm planning a…").
const PROBLEM_OPENERS: [&[&str]; 104] = [
    &["i", "am", "thinking", "about"],
    &["we", "are", "thinking", "about"],
    &["i", "would", "love", "some", "help", "with"],
    &["i", "would", "love", "some", "help"],
    &["i", "would", "like", "some", "help"],
    &["i", "could", "use", "some", "help"],
    &["i", "am", "having", "troubles", "with"],
    &["we", "are", "having", "troubles", "with"],
    &["we", "got", "a", "complaint", "about"],
    &["i", "got", "a", "complaint", "about"],
    &["we", "got", "complaints", "about"],
    &["we", "are", "getting", "complaints", "about"],
    &["i", "will", "be", "working", "on"],
    &["we", "will", "be", "working", "on"],
    &["i", "keep", "getting"],
    &["we", "keep", "getting"],
    &["i", "keep", "seeing"],
    &["we", "keep", "seeing"],
    &["i", "am", "getting", "an", "error"],
    &["i", "am", "having", "an", "issue", "with"],
    &["we", "are", "having", "an", "issue", "with"],
    &["i", "am", "having", "a", "problem", "with"],
    &["we", "are", "having", "a", "problem", "with"],
    &["there", "is", "something", "wrong", "with"],
    &["something", "is", "wrong", "with"],
    &["something", "is", "off", "with"],
    &["i", "am", "putting", "together"],
    &["we", "are", "putting", "together"],
    &["i", "am", "setting", "up"],
    &["we", "are", "setting", "up"],
    &["i", "am", "launching"],
    &["we", "are", "launching"],
    &["give", "me", "a", "hand"],
    &["lend", "me", "a", "hand"],
    &["give", "us", "a", "hand"],
    &["i", "have", "a", "question", "about"],
    &["i", "have", "some", "questions", "about"],
    &["i", "have", "questions", "about"],
    &["i", "have", "a", "few", "questions", "about"],
    &["i", "need", "some", "help", "with"],
    &["i", "need", "some", "help"],
    &["we", "need", "some", "help"],
    &["i", "could", "use", "some", "help", "with"],
    &["i", "could", "use", "help", "with"],
    &["i", "would", "like", "some", "help", "with"],
    &["i", "would", "like", "help", "with"],
    &["i", "want", "help", "with"],
    &["i", "am", "writing"],
    &["we", "are", "writing"],
    &["i", "am", "building"],
    &["we", "are", "building"],
    &["i", "am", "making"],
    &["i", "am", "designing"],
    &["i", "am", "developing"],
    &["we", "are", "developing"],
    &["i", "am", "renovating"],
    &["we", "are", "renovating"],
    &["i", "am", "learning"],
    &["i", "am", "studying"],
    &["i", "am", "applying", "for"],
    &["i", "am", "looking", "for"],
    &["i", "am", "trying", "to"],
    &["we", "are", "trying", "to"],
    &["i", "have", "been", "trying", "to"],
    &["we", "have", "been", "trying", "to"],
    &["i", "am", "working", "on"],
    &["we", "are", "working", "on"],
    &["i", "am", "looking", "into"],
    &["we", "are", "looking", "into"],
    &["i", "am", "stuck", "on"],
    &["i", "am", "stuck", "with"],
    &["we", "are", "stuck", "on"],
    &["i", "am", "struggling", "with"],
    &["we", "are", "struggling", "with"],
    &["i", "am", "having", "trouble", "with"],
    &["we", "are", "having", "trouble", "with"],
    &["i", "am", "having", "problems", "with"],
    &["we", "are", "having", "problems", "with"],
    &["i", "am", "having", "issues", "with"],
    &["we", "are", "having", "issues", "with"],
    &["i", "have", "a", "problem", "with"],
    &["we", "have", "a", "problem", "with"],
    &["i", "have", "an", "issue", "with"],
    &["we", "have", "an", "issue", "with"],
    &["there", "is", "a", "problem", "with"],
    &["there", "is", "an", "issue", "with"],
    &["there", "is", "a", "bug", "in"],
    &["can", "you", "help", "me", "with"],
    &["could", "you", "help", "me", "with"],
    &["can", "you", "help", "us", "with"],
    &["can", "you", "help", "me"],
    &["could", "you", "help", "me"],
    &["can", "you", "help", "us"],
    &["i", "need", "a", "hand", "with"],
    &["i", "am", "planning"],
    &["we", "are", "planning"],
    &["i", "am", "organizing"],
    &["we", "are", "organizing"],
    &["i", "am", "organising"],
    &["i", "am", "preparing"],
    &["we", "are", "throwing"],
    // Without a subject, last: "I'm writing a novel and need help with the plot" is about
    // the novel.
    &["need", "help", "with"],
    &["need", "help"],
    &["need", "some", "help"],
];

/// Openings that lead into new work when one of [`ACTION_VERBS`] follows ("let's plan the
/// offsite", "we need to fix the login").
const WORK_OPENERS: [&[&str]; 36] = [
    &["i", "would", "like", "us", "to"],
    &["i", "want", "us", "to"],
    &["helping", "me"],
    &["helping", "us"],
    &["asked", "me", "to"],
    &["asked", "us", "to"],
    &["i", "would", "love", "to"],
    &["i", "have", "been", "asked", "to"],
    &["we", "have", "been", "asked", "to"],
    &["i", "was", "asked", "to"],
    &["i", "am", "looking", "to"],
    &["we", "are", "looking", "to"],
    &["i", "have", "got", "to"],
    &["we", "have", "got", "to"],
    &["i", "must"],
    &["let", "us"],
    &["i", "want", "to"],
    &["i", "would", "like", "to"],
    &["we", "need", "to"],
    &["i", "need", "to"],
    &["we", "should"],
    &["we", "have", "to"],
    &["i", "have", "to"],
    &["we", "must"],
    &["can", "we"],
    &["could", "we"],
    &["time", "to"],
    &["help", "me"],
    &["help", "us"],
    &["let", "me"],
    &["i", "am", "going", "to"],
    &["we", "are", "going", "to"],
    &["i", "plan", "to"],
    &["we", "plan", "to"],
    &["we", "want", "to"],
    &["i", "am", "about", "to"],
];

/// Verbs of new work after a [`WORK_OPENERS`] phrase, with their particle when they take one.
/// Verbs that steer the conversation ("go back", "continue", "wrap up") are not here.
const ACTION_VERBS: [&[&str]; 83] = [
    &["get", "ready", "for"],
    &["prepare", "for"],
    &["put", "together"],
    &["look", "at"],
    &["track", "down"],
    &["apply", "for"],
    &["renew"],
    &["redo"],
    &["replace"],
    &["repair"],
    &["paint"],
    &["install"],
    &["clean"],
    &["cancel"],
    &["come", "up", "with"],
    &["pick"],
    &["find"],
    &["buy"],
    &["sell"],
    &["figure", "out"],
    &["work", "out"],
    &["find", "out"],
    &["talk", "about"],
    &["think", "about"],
    &["sort", "out"],
    &["clean", "up"],
    &["start", "on"],
    &["set", "up"],
    &["speed", "up"],
    &["look", "into"],
    &["dig", "into"],
    &["go", "over"],
    &["organize"],
    &["organise"],
    &["investigate"],
    &["implement"],
    &["refactor"],
    &["research"],
    &["schedule"],
    &["prepare"],
    &["migrate"],
    &["discuss"],
    &["design"],
    &["redesign"],
    &["create"],
    &["update"],
    &["review"],
    &["deploy"],
    &["debug"],
    &["build"],
    &["write"],
    &["rewrite"],
    &["draft"],
    &["plan"],
    &["test"],
    &["ship"],
    &["fix"],
    &["solve"],
    &["tackle"],
    &["start"],
    &["setup"],
    &["outline"],
    &["optimize"],
    &["optimise"],
    &["improve"],
    &["understand"],
    &["brainstorm"],
    &["upgrade"],
    &["automate"],
    &["learn"],
    &["study"],
    &["choose"],
    &["compare"],
    &["book"],
    &["arrange"],
    &["renovate"],
    &["throw"],
    &["host"],
    &["translate"],
    &["evaluate"],
    &["analyze"],
    &["analyse"],
    &["reduce"],
];

/// Switch cues that can only mean going back to a piece of work.
const EXPLICIT_SWITCHES: [&[&str]; 18] = [
    &["swap", "to"],
    &["swap", "back", "to"],
    &["swap", "over", "to"],
    &["jump", "over", "to"],
    &["switch", "back", "to"],
    &["switch", "over", "to"],
    &["switch", "to"],
    &["switching", "to"],
    &["go", "back", "to"],
    &["get", "back", "to"],
    &["come", "back", "to"],
    &["circle", "back", "to"],
    &["jump", "back", "to"],
    &["head", "back", "to"],
    &["going", "back", "to"],
    &["getting", "back", "to"],
    &["move", "back", "to"],
    &["return", "to"],
];

/// Softer switch cues: they switch only when what follows names an effort.
const SOFT_SWITCHES: [&[&str]; 19] = [
    &["turning", "to"],
    &["turn", "to"],
    &["go", "on", "with"],
    &["keep", "going", "with"],
    &["get", "on", "with"],
    &["continue", "with"],
    &["continue", "on"],
    &["carry", "on", "with"],
    &["continue"],
    &["resume"],
    &["pick", "up"],
    &["revisit"],
    &["back", "on"],
    &["regarding"],
    &["re"],
    &["about"],
    &["as", "for"],
    &["on"],
    &["for"],
];

/// Targets of "back to …" that are not efforts ("I'll get back to you", "back to normal").
const NOT_TARGETS: [&str; 14] = [
    "you", "me", "him", "her", "them", "it", "that", "this", "normal", "square", "work", "sleep",
    "bed", "basics",
];

/// Whole messages that ask what this is or how to use it.
const HELP_MESSAGES: [&str; 29] = [
    "explain yourself",
    "how to use",
    "how to use this",
    "show me the commands",
    "the commands",
    "user guide",
    "guide",
    "help",
    "help me",
    "help please",
    "please help",
    "can you help",
    "can you help me",
    "could you help me",
    "i need help",
    "what is this",
    "what is this app",
    "who are you",
    "what are you",
    "info",
    "instructions",
    "how does this work",
    "what now",
    "what do i do",
    "what do i do now",
    "tutorial",
    "commands",
    "usage",
    "hello what can you do",
];

/// Phrases that ask what CCM is or what the model understands, anywhere in a message.
const HELP_PHRASES: [&str; 71] = [
    "where do i begin",
    "where should i start",
    "where should i begin",
    "what is this tool",
    "what can i ask",
    "what should i ask",
    "what do i ask",
    "i do not understand what",
    "i do not understand how",
    "what am i supposed to",
    "what i am supposed to",
    "how this works",
    "how this app works",
    "how this thing works",
    "user guide",
    "user manual",
    "what does ccm",
    "help me understand this",
    "list of commands",
    "what does this app",
    "what does ccm stand for",
    "what does ccm mean",
    "how to use this",
    "how to use ccm",
    "what do i type",
    "what should i type",
    "what do i say",
    "what should i say",
    "what do i write",
    "what is this app for",
    "what is this for",
    "what is ccm for",
    "what is this thing for",
    "how do you work",
    "how does ccm work",
    "what are you able to do",
    "what are you capable of",
    "what can this do",
    "what can you help",
    "what do you help with",
    "what is this thing",
    "what is ccm",
    "what's ccm",
    "what is cognitive context",
    "how does ccm",
    "explain ccm",
    "how does this work",
    "how does it work",
    "how does this app work",
    "how do i use",
    "how should i use",
    "how can i use",
    "what should i try",
    "where do i start",
    "how do i start",
    "how do i begin",
    "how do i get started",
    "what commands",
    "what do you understand",
    "getting started",
    "how can you help",
    "what can i say",
    "what can i do here",
    "what does this app do",
    "what does this do",
    "what is an effort",
    "what are efforts",
    "how do efforts work",
    "i am lost",
    "i am confused",
    "i am new here",
];

/// Phrases that end a review of expanded efforts wherever they stand ("got it" is read
/// separately, alone in its clause).
const COLLAPSE_PHRASES: [&str; 5] = [
    "that is enough",
    "enough details",
    "that is all i needed",
    "that answers it",
    "that answers my question",
];

/// Phrases that ask about earlier work.
const RECALL_PHRASES: [&str; 83] = [
    "notes about",
    "notes for",
    "the summary",
    "the story with",
    "what is the story",
    "a while ago",
    "tell me again",
    "when was",
    "when did",
    "what did",
    "any notes on",
    "notes on",
    "any update on",
    "any news on",
    "what do we have on",
    "where are we with",
    "where are we on",
    "where do we stand",
    "where did we leave",
    "what was wrong",
    "what went wrong",
    "what was the problem",
    "what was the issue",
    "what caused",
    "how did",
    "what happened",
    "what we found",
    "what we decided",
    "what we did",
    "what we concluded",
    "what we figured out",
    "what we agreed",
    "what we learned",
    "what fixed",
    "what solved",
    "what was the solution",
    "summary of",
    "what did i",
    "how did i",
    "where did i",
    "did i",
    "what had i",
    "recap",
    "catch me up",
    "tell me about",
    "what do we know about",
    "summarize",
    "summarise",
    "where were we",
    "what happened with",
    "what happened to",
    "what was the outcome",
    "what came of",
    "what came out of",
    "what about",
    "remind me",
    "remember",
    "recall",
    "refresh my memory",
    "did we",
    "what did we",
    "how did we",
    "why did we",
    "when did we",
    "which did we",
    "where did we land",
    "where did we end up",
    "what have we decided",
    "what have we figured out",
    "what have we found",
    "what had we",
    "what was the",
    "what were the",
    "what was our",
    "what were our",
    "what was decided",
    "what is the latest on",
    "what is the verdict",
    "earlier",
    "last time",
    "previously",
    "details of",
    "details on",
];

/// Phrases that make a message a request even without a question mark.
const ASKING_PHRASES: [&str; 10] = [
    "remind me",
    "tell me",
    "show me",
    "details of",
    "recap",
    "catch me up",
    "summarize",
    "summarise",
    "what about",
    "refresh my memory",
];

/// First words of a question that is a request ("can you close it?").
const REQUEST_STARTS: [&str; 6] = ["can", "could", "would", "will", "shall", "fancy"];

const DETAIL_PHRASES: [&str; 7] = [
    "details",
    "detail",
    "exactly",
    "specifics",
    "the full",
    "step by step",
    "show me",
];

const STATUS_PHRASES: [&str; 15] = [
    "show me my efforts",
    "all my efforts",
    "which efforts are",
    "with everything",
    "what is on my plate",
    "an overview",
    "status",
    "what are we working on",
    "which efforts",
    "what is open",
    "what efforts",
    "list my efforts",
    "list the efforts",
    "show my efforts",
    "what am i working on",
];

/// Words cut from the front of a name or target ("the auth bug" → "auth bug").
const LEADING_FILLERS: [&str; 22] = [
    "the", "a", "an", "my", "our", "your", "their", "this", "that", "some", "with", "on", "why",
    "how", "what", "whether", "if", "where", "to", "about", "into", "at",
];

/// Words cut from the end of a name ("billing export next" → "billing export"), and words a
/// cut-off name must not end on ("memory leak in the" → "memory leak").
const TRAILING_FILLERS: [&str; 32] = [
    "tomorrow",
    "tonight",
    "later",
    "soon",
    "yesterday",
    "now",
    "next",
    "today",
    "please",
    "first",
    "then",
    "again",
    "effort",
    "the",
    "a",
    "an",
    "in",
    "of",
    "for",
    "to",
    "at",
    "on",
    "with",
    "and",
    "from",
    "my",
    "our",
    "your",
    "their",
    "is",
    "are",
    "problem",
];

/// Words a problem statement's name leaves out ("why our login page is so slow" → "login page
/// slow"): auxiliaries and intensifiers say nothing about which work it is.
const NAME_SKIPS: [&str; 22] = [
    "wants",
    "wanted",
    "is",
    "are",
    "was",
    "were",
    "be",
    "been",
    "being",
    "keeps",
    "kept",
    "does",
    "do",
    "did",
    "so",
    "very",
    "really",
    "always",
    "still",
    "suddenly",
    "sometimes",
    "getting",
];

/// Clause ends inside a sentence beyond punctuation: what follows is another thought.
const CLAUSE_BREAKS: [&str; 9] = [
    "but", "because", "since", "which", "though", "although", "however", "while", "whereas",
];

/// Most words an effort name taken from a message keeps.
const MAX_NAME_WORDS: usize = 4;

/// Most words the name of a stated problem keeps: its symptom sits at its end ("login page
/// slow on mobile").
const MAX_PROBLEM_NAME_WORDS: usize = 5;

/// One clause of a message: its words with contractions spelled out, and whether its sentence
/// is a question.
#[derive(Debug, Clone)]
struct Clause {
    words: Vec<String>,
    question: bool,
    /// Whether its sentence starts with a condition ("if it works, we're done"), which puts
    /// every clause of it in the future.
    conditional: bool,
    /// Whether a contrast with a negation follows it ("it's fixed on desktop, but not on
    /// mobile"), which makes what it says only partly true.
    qualified: bool,
    /// Whether it is the last clause of its sentence, where a question mark belongs: in
    /// "Thinking about a new provider, can you help me weigh it up?" the first clause states.
    ends_sentence: bool,
}

impl Clause {
    /// The clause's words as string slices, the form every pattern is matched on.
    fn w(&self) -> Vec<&str> {
        self.words.iter().map(String::as_str).collect()
    }

    /// Whether a negation earlier in the clause than `at` cancels what stands at `at`.
    fn negated_before(&self, at: usize) -> bool {
        self.words[..at.min(self.words.len())]
            .iter()
            .enumerate()
            .any(|(i, w)| {
                NEGATORS.contains(&w.as_str())
                    && !(w == "no"
                        && self
                            .words
                            .get(i + 1)
                            .is_some_and(|n| NO_IDIOMS.contains(&n.as_str())))
            })
            || self.words.get(at + 1).is_some_and(|w| w == "not")
    }

    /// Whether the clause speaks of the future, a wish, a condition or a doubt before `at`, or
    /// reports or asks about it ("remind me how we fixed it", "I know what fixed it").
    fn irrealis_before(&self, at: usize) -> bool {
        const REPORTED: [&str; 9] = [
            "how", "what", "why", "which", "who", "remind", "remember", "recall", "wonder",
        ];
        let before = &self.words[..at.min(self.words.len())];
        let framed = |i: usize| {
            before
                .get(i + 1)
                .is_some_and(|n| ["say", "think", "guess", "bet"].contains(&n.as_str()))
        };
        self.conditional
            || before.iter().any(|w| REPORTED.contains(&w.as_str()))
            || before
                .iter()
                .enumerate()
                .any(|(i, w)| IRREALIS.contains(&w.as_str()) && !(w == "would" && framed(i)))
            || self.words[..at.min(self.words.len())]
                .windows(2)
                .any(|p| p[0] == "to" && p[1] == "be")
    }

    /// Whether the clause takes back a completion said before it in the sentence: a negation
    /// ("I'm not convinced"; "no more 401s" is good news), "still", "again", "except", or
    /// something broken.
    fn states_a_setback(&self) -> bool {
        const SETBACKS: [&str; 8] = [
            "still",
            "again",
            "except",
            "broke",
            "broken",
            "failing",
            "fails",
            "regressed",
        ];
        // "Fast again", "working again" are good news; "slow again" is not.
        const RECOVERED: [&str; 11] = [
            "fast",
            "quick",
            "working",
            "works",
            "fine",
            "ok",
            "okay",
            "normal",
            "good",
            "stable",
            "responsive",
        ];
        self.words.iter().enumerate().any(|(i, w)| {
            let good_news = (w == "no" || w == "not")
                && self.words.get(i + 1).is_some_and(|n| {
                    ["more", "longer", "problem", "worries"].contains(&n.as_str())
                });
            let recovered =
                w == "again" && i > 0 && RECOVERED.contains(&self.words[i - 1].as_str());
            (NEGATORS.contains(&w.as_str()) && !good_news)
                || (SETBACKS.contains(&w.as_str()) && !recovered)
        })
    }

    /// Whether the clause asks a question that is not a request: "is it done?", "what did
    /// we…", but not "can you close it?".
    fn asks_not_requests(&self) -> bool {
        let first = self.words.first().map(String::as_str).unwrap_or("");
        self.question && !REQUEST_STARTS.contains(&first)
    }

    /// Whether the clause starts like a yes-or-no or a wh-question even without a mark.
    fn starts_like_question(&self) -> bool {
        let w = self.w();
        // "what happened with…", "who decided…": a question word and a verb in the past.
        let wh_past = match w.as_slice() {
            ["what" | "how" | "why" | "when" | "where" | "who" | "which", verb, ..] => {
                verb.len() > 4 && verb.ends_with("ed")
            }
            _ => false,
        };
        wh_past
            || matches!(
                w.as_slice(),
                [
                    "is" | "are" | "was" | "were" | "has" | "have" | "did" | "does" | "do",
                    "it" | "that"
                        | "this"
                        | "we"
                        | "you"
                        | "the"
                        | "everything"
                        | "anyone"
                        | "anybody",
                    ..
                ] | [
                    "what" | "how" | "why" | "when" | "where" | "which" | "who",
                    "did"
                        | "do"
                        | "does"
                        | "was"
                        | "were"
                        | "is"
                        | "are"
                        | "have"
                        | "had"
                        | "has"
                        | "should"
                        | "can"
                        | "could",
                    ..
                ]
            )
    }
}

/// The intents of a message, in the order a careful model acts on them: conclude what is done,
/// switch, open what is new, collapse, then recall and status.
///
/// # Examples
/// ```
/// use ccm_engine::offline::{detect_intents, Intent};
/// let intents = detect_intents("That's resolved. Let's work on the billing export next.");
/// assert!(matches!(&intents[0], Intent::Close { .. }));
/// assert_eq!(
///     intents[1],
///     Intent::Open { name: "billing export".into(), explicit: true }
/// );
/// let stated = detect_intents("I'm trying to figure out why our login page is slow on mobile");
/// assert_eq!(
///     stated,
///     [Intent::Open { name: "login page slow on mobile".into(), explicit: false }]
/// );
/// assert!(detect_intents("It's not fixed yet.").is_empty());
/// ```
pub fn detect_intents(message: &str) -> Vec<Intent> {
    let text = normalise(message);
    let spelled = spell_out(&text);
    let clauses = clauses(&text);
    let mut intents = Vec::new();

    // A headline of a finished step ("bowling alley booked") concludes only when no clause of
    // the message says more plainly what is done ("…, party's done!").
    let close = clauses
        .iter()
        .find_map(|c| close_in(c, false))
        .or_else(|| clauses.iter().find_map(|c| close_in(c, true)));
    let open = open_in(&clauses);
    let switch = clauses
        .iter()
        .enumerate()
        .find_map(|(i, clause)| switch_in(clause, i + 1 < clauses.len()))
        .or_else(|| marked_topic(&clauses))
        .or_else(|| resumed(&clauses, message));

    if let Some((mention, specific)) = close {
        let mention = if specific {
            mention
        } else {
            message.trim().to_string()
        };
        intents.push(Intent::Close { mention, specific });
    }
    if let Some((target, explicit)) = switch {
        // "Let's get back to work on the login page" has both; the switch says it better.
        intents.push(Intent::Switch { target, explicit });
    }
    if let Some((name, explicit)) = &open {
        // A soft cue ("let's turn to the budget") moves only to an effort it names; when it
        // names none, the new work is what was asked for, so both go to the plan.
        if !intents
            .iter()
            .any(|i| matches!(i, Intent::Switch { explicit: true, .. }))
        {
            intents.push(Intent::Open {
                name: name.clone(),
                explicit: *explicit,
            });
        }
    }
    // "Got it" is a whole thought ("got it, thanks"); "finally got it working" is not.
    let got_it = clauses.iter().any(|c| {
        let w = c.w();
        w.starts_with(&["got", "it"]) && w[2..].iter().all(|x| BARE_FILLERS.contains(x))
    });
    if got_it
        || COLLAPSE_PHRASES
            .iter()
            .any(|p| contains_phrase(&spelled, p))
    {
        intents.push(Intent::Collapse);
    }
    // A new effort's description often mentions the past ("help me with the export we did
    // earlier"); opening it is what the person asked for, so recall is not read into it. And
    // a statement ("we decided to set it to 86400") reports a fact: only a question or a
    // request asks to recall one.
    // "Tell me again about…", "remind me again what…": "again" stands inside the phrases.
    let plain = spelled.replace(" again ", " ");
    let fetches = clauses.first().is_some_and(fetch_request);
    // "I forgot how we solved it"; "i forget, why was it slow?".
    let forgot = clauses.iter().any(forgot_what)
        || (text.contains('?')
            && (contains_phrase(&spelled, "i forget") || contains_phrase(&spelled, "i forgot")));
    let asks = text.contains('?')
        || fetches
        || forgot
        || clauses.iter().any(Clause::starts_like_question)
        || ASKING_PHRASES.iter().any(|p| contains_phrase(&plain, p));
    // "How much was the refund again?" asks to be reminded; so does any question about how
    // things were ("how big was the bundle?", "who did the filing?").
    let reminded = text.trim_end().ends_with("again?");
    // "Remind me to call the bakery", "remind me later about the party": a reminder to set,
    // not a question about the past.
    let reminder = [
        "to", "later", "tomorrow", "in", "at", "on", "next", "tonight",
    ]
    .iter()
    .any(|x| contains_phrase(&plain, &format!("remind me {x}")));
    // A "why didn't…" is a complaint about the work at hand, not a question about the past.
    let about_the_past = clauses.iter().any(|c| {
        c.question
            && !c.words.iter().any(|x| NEGATORS.contains(&x.as_str()))
            && matches!(
                c.w().as_slice(),
                [
                    "what" | "how" | "when" | "where" | "who" | "which",
                    "was" | "were" | "did" | "had",
                    ..
                ] | [
                    "how",
                    "much" | "many" | "big" | "long" | "fast" | "slow",
                    "was" | "were" | "did",
                    ..
                ]
            )
    });
    let recalls = reminded
        || about_the_past
        || fetches
        || forgot
        || RECALL_PHRASES.iter().any(|p| {
            contains_phrase(&plain, p)
                && !(p == &"remember" && contains_phrase(&plain, "remember to"))
                && !(p == &"remind me" && reminder)
        });
    // "What did you just do?" asks about the model's own last step, not about stored work.
    let about_itself = clauses.iter().any(|c| {
        let w = c.w();
        w.windows(2)
            .any(|p| ["did", "do", "are", "were"].contains(&p[0]) && p[1] == "you")
            && (w.contains(&"just") || w.last() == Some(&"do"))
    });
    let recalls = recalls && !about_itself;
    if open.is_none()
        && asks
        && recalls
        && !intents.iter().any(|i| matches!(i, Intent::Close { .. }))
    {
        intents.push(Intent::Recall {
            query: message.trim().to_string(),
            details: DETAIL_PHRASES.iter().any(|p| contains_phrase(&spelled, p)),
        });
    }
    // "Status code is 200", "the status bar": "status" before a noun of its own names another
    // thing's status, not the efforts'.
    let other_status = clauses.iter().any(|c| {
        let w = c.w();
        w.iter().enumerate().any(|(i, x)| {
            *x == "status"
                && w.get(i + 1).is_some_and(|next| {
                    next.chars().all(|c| c.is_ascii_alphabetic())
                        && !["please", "of", "update", "report", "check", "now", "again"]
                            .contains(next)
                })
        })
    });
    if STATUS_PHRASES
        .iter()
        .any(|p| contains_phrase(&spelled, p) && !(*p == "status" && other_status))
    {
        // "Show me my efforts" asks for the list, not for a search of the past.
        intents.retain(|i| !matches!(i, Intent::Recall { .. }));
        intents.push(Intent::Status);
    }
    // Asking for help with something ("help me with the import") is new work, handled above.
    let bare = spelled.trim_matches(|c: char| !c.is_alphanumeric());
    let bare: String = bare
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .collect::<Vec<_>>()
        .join(" ");
    let bare = bare
        .trim_start_matches("hi ")
        .trim_start_matches("hello ")
        .trim_start_matches("hey ")
        .trim_start_matches("ok ");
    let bare = bare
        .trim_end_matches(" please")
        .trim_end_matches(" thanks")
        .trim_end_matches(" pls");
    // A message of question marks alone asks what this is.
    let puzzled = !message.trim().is_empty() && message.trim().chars().all(|c| c == '?');
    // "How do I close an effort?", "how do I get back to an old topic?": how to use CCM.
    let how_to_use = clauses.iter().any(|c| {
        let w = c.w();
        asks_how(&w)
            && w.iter()
                .any(|x| ["effort", "efforts", "topic", "topics", "ccm", "app", "tool"].contains(x))
    });
    // Asking about CCM itself wins over any other reading of the same words ("show me the
    // commands" is no search, "help me understand this tool" no new work).
    let about_ccm = puzzled
        || how_to_use
        || HELP_MESSAGES.contains(&bare)
        || [
            "help me understand this",
            "what does this app",
            "what does ccm",
            "how this works",
            "how this app works",
        ]
        .iter()
        .any(|p| contains_phrase(&spelled, p));
    let asks_for_help = about_ccm
        || HELP_MESSAGES.contains(&bare)
        || HELP_PHRASES.iter().any(|p| contains_phrase(&spelled, p))
        || help_at_end(&clauses);
    if about_ccm {
        // Asking how to do something with efforts does none of it.
        intents.clear();
    }
    if (open.is_none() || about_ccm)
        && asks_for_help
        && !intents.iter().any(|i| matches!(i, Intent::Switch { .. }))
    {
        intents.push(Intent::Help);
    }
    intents
}

/// A topic marker standing alone before what it marks ("re: login page — any ideas?",
/// "regarding: the party"): the next clause names the effort.
fn marked_topic(clauses: &[Clause]) -> Option<(String, bool)> {
    clauses.windows(2).find_map(|pair| {
        let marker = matches!(
            pair[0].w().as_slice(),
            ["re"] | ["regarding"] | ["as", "for"] | ["about"] | ["topic"]
        );
        let target = trim_name(&pair[1].w(), MAX_PROBLEM_NAME_WORDS);
        (marker && !target.is_empty()).then_some((target, false))
    })
}

/// A bare cue to resume ("let's continue", "where were we?") beside words that name the work
/// ("where were we with the login page? let's continue"): the whole message is the target, so
/// the move happens only when it names an effort clearly.
fn resumed(clauses: &[Clause], message: &str) -> Option<(String, bool)> {
    let cue = clauses.iter().any(|c| {
        let w = c.w();
        let w: &[&str] = w.strip_prefix(&["let", "us"][..]).unwrap_or(&w);
        let w: &[&str] = w.strip_prefix(&["ok"][..]).unwrap_or(w);
        matches!(
            w,
            ["continue"]
                | ["continue", "please"]
                | ["carry", "on"]
                | ["keep", "going"]
                | ["resume"]
                | ["proceed"]
                | ["where", "were", "we"]
                | ["where", "were", "we", "with" | "on", ..]
        )
    });
    (cue && (clauses.len() > 1 || clauses.iter().any(|c| c.w().len() > 4)))
        .then(|| (message.trim().to_string(), false))
}

/// New work named in a message that no pattern above reads, when the message asks for help or
/// says the person means to take something on ("need a packing list for camping", "we should
/// do something about the onboarding docs", "the seating plan is doing my head in, help"):
/// the name of the thing it is about. The model opens it only when it fits no effort it knows
/// ([`detect_intents`] found nothing, and the name shares no word with any effort), since
/// details of the work at hand are worded the same way.
pub(crate) fn new_work(message: &str) -> Option<String> {
    let clauses = clauses(&normalise(message));
    // What says the person wants something done, in any clause.
    // Where the signal ends in a clause, unless a negation before it cancels it.
    let signal_at = |c: &Clause| -> Option<usize> {
        let w = c.w();
        // A call for help: "help me", "help with", "need help", "…, help", not "it would
        // help" or "help the team understand".
        let at = w
            .iter()
            .enumerate()
            .find(|(i, x)| {
                **x == "help"
                    && (w.len() == 1
                        || w.get(i + 1)
                            .is_some_and(|n| ["me", "us", "with", "please", "pls"].contains(n))
                        || i.checked_sub(1).and_then(|b| w.get(b)).is_some_and(|b| {
                            ["need", "want", "some", "your", "any", "get"].contains(b)
                        }))
            })
            .map(|(i, _)| (i, i))
            .or_else(|| {
                [
                    &["meaning", "to"][..],
                    &["hoping", "to"],
                    &["something", "about"],
                    &["can", "not", "decide"],
                    &["any", "ideas"],
                    &["any", "idea"],
                    &["need", "a"],
                    &["need", "an"],
                    &["need", "to"],
                    &["get", "on", "it"],
                    &["doing", "my", "head", "in"],
                ]
                .iter()
                .find_map(|p| find_seq(&w, p).map(|at| (at, at + p.len() - 1)))
            })?;
        // The negation inside "can not decide" is part of the signal, so only words before
        // it count.
        let (start, end) = at;
        (!w[..start].iter().any(|x| NEGATORS.contains(x))).then_some(end)
    };
    // A yes-or-no question ("should we open a ticket for this?") asks for advice, and "too"
    // or "also" adds to the work at hand.
    if clauses.iter().all(|c| signal_at(c).is_none())
        || clauses
            .iter()
            .any(|c| c.words.iter().any(|x| x == "too") || (c.question && c.starts_like_question()))
        || normalise(message).contains(" also ")
    {
        return None;
    }
    // The thing named: first one introduced with "a" or "an" (new), then the subject of a
    // clause ("the seating plan is…", "our router…"), then one of the person's own ("my"),
    // then one introduced with "the".
    const ENDS: [&str; 26] = [
        "for", "to", "of", "in", "on", "at", "by", "with", "from", "about", "and", "or", "but",
        "is", "are", "was", "were", "that", "which", "this", "next", "by", "into", "can", "i",
        "we",
    ];
    let run_after = |w: &[&str], at: usize| -> String {
        let run: Vec<&str> = w[at + 1..]
            .iter()
            .copied()
            .take_while(|x| !ENDS.contains(x) && x.chars().all(|c| c.is_ascii_alphanumeric()))
            .collect();
        trim_name(&run, MAX_NAME_WORDS)
    };
    let mut found: [Option<String>; 4] = [None, None, None, None];
    for clause in &clauses {
        let w = clause.w();
        for (at, word) in w.iter().enumerate() {
            let rank = match *word {
                "a" | "an" => 0,
                "the" | "my" | "our" if at == 0 => 1,
                "my" | "our" | "your" => 2,
                "the" => 3,
                _ => continue,
            };
            if found[rank].is_none() {
                let name = run_after(&w, at);
                if has_content(&name) {
                    found[rank] = Some(name);
                }
            }
        }
    }
    // "I need a break" names no work: a thing needed is new work when it has a name of more
    // than one word ("a packing list").
    let needs_only = clauses.iter().all(|c| {
        let w = c.w();
        signal_at(c).is_none_or(|at| at > 0 && w[at - 1] == "need" && ["a", "an"].contains(&w[at]))
    });
    found
        .into_iter()
        .flatten()
        .next()
        .filter(|name| !needs_only || name.contains(' '))
}

/// Whether a clause asks to be shown something stored: "look up the login notes", "search for
/// the tax return", "pull up the notes", "can you bring back what we had on…".
fn fetch_request(clause: &Clause) -> bool {
    let w = clause.w();
    let mut rest: &[&str] = &w;
    for prefix in [
        &["please"][..],
        &["can", "you"],
        &["could", "you"],
        &["would", "you"],
        &["hey"],
        &["ok"],
    ] {
        if let Some(more) = rest.strip_prefix(prefix) {
            rest = more;
        }
    }
    matches!(
        rest,
        ["recall" | "search" | "fetch" | "retrieve", ..]
            | ["look" | "pull" | "bring" | "dig", "up" | "back" | "out", ..]
            | ["find", "me" | "what" | "the", ..]
            | ["show", "me", ..]
            | ["give", "me", "the" | "a", ..]
            | ["tell", "me", "again", ..]
    )
}

/// Whether a clause says the person forgot something and asks for it: "I forgot how we solved
/// it", "I don't remember how the tax return ended".
fn forgot_what(clause: &Clause) -> bool {
    let w = clause.w();
    const WH: [&str; 7] = ["how", "what", "why", "when", "where", "who", "which"];
    w.windows(2)
        .any(|p| ["forgot", "forget", "forgotten"].contains(&p[0]) && WH.contains(&p[1]))
        || w.windows(3).any(|p| {
            ["do", "can", "did"].contains(&p[0])
                && p[1] == "not"
                && ["remember", "recall"].contains(&p[2])
        }) && w
            .iter()
            .skip_while(|x| !["remember", "recall"].contains(x))
            .nth(1)
            .is_some_and(|x| WH.contains(x))
}

/// Whether the message turns down a change ("I don't want to work on the party today", "let's
/// not go back to that"), puts it off ("the login page can wait") or reports someone's question
/// about it ("my boss asked if the login page was done"): such a message mentions another
/// effort without asking to move there.
pub(crate) fn declines(message: &str) -> bool {
    const CHANGES: [&str; 12] = [
        "work", "switch", "back", "close", "start", "talk", "open", "touch", "think", "bother",
        "deal", "worry",
    ];
    clauses(&normalise(message)).iter().any(|clause| {
        let w = clause.w();
        defers(&w)
            || reports_a_question(&w)
            || clause
                .words
                .iter()
                .enumerate()
                .any(|(i, w)| CHANGES.contains(&w.as_str()) && clause.negated_before(i))
    })
}

/// "What can you do?" asks for help only when nothing follows it ("what can you do about the
/// login page?" asks about the login page).
fn help_at_end(clauses: &[Clause]) -> bool {
    const ABOUT_THIS: [&str; 6] = ["this", "it", "you", "ccm", "app", "thing"];
    clauses.iter().any(|c| {
        let w = c.w();
        let ends_on_this = |head: &[&str]| {
            w.ends_with(head)
                || (w.len() > head.len()
                    && ABOUT_THIS.contains(w.last().unwrap_or(&""))
                    && w[..w.len() - 1]
                        .iter()
                        .rposition(|x| *x == head[head.len() - 1])
                        .is_some_and(|at| w[..=at].ends_with(head)))
        };
        // "What should I do first?", "what do I do now?".
        let bare = match w.last() {
            Some(&("first" | "now" | "here" | "next")) => &w[..w.len() - 1],
            _ => &w[..],
        };
        bare.ends_with(&["what", "should", "i", "do"])
            || bare.ends_with(&["what", "do", "i", "do"])
            || w.ends_with(&["what", "can", "you", "do"])
            || w.ends_with(&["what", "do", "you", "do"])
            || ends_on_this(&["what", "can", "i", "do"])
            || ends_on_this(&["how", "do", "i", "use"])
            || (w.starts_with(&["how", "does"])
                && w.last() == Some(&"work")
                && w[2..w.len() - 1]
                    .iter()
                    .all(|x| ABOUT_THIS.contains(x) || ["the", "this"].contains(x)))
    })
}

/// The closing in a clause: what is done (the mention) and whether it is a noun of its own.
/// With `domain_headlines`, a headline may end on a word that finishes one kind of work
/// ("birthday party planned").
fn close_in(clause: &Clause, domain_headlines: bool) -> Option<(String, bool)> {
    // Words that make a completion partial or doubtful: "done with the first part", "all set
    // except the cake", "done in theory", "they say it's resolved".
    const PARTIAL: [&str; 16] = [
        "part",
        "step",
        "phase",
        "half",
        "stage",
        "except",
        "apart",
        "besides",
        "theory",
        "theoretically",
        "supposedly",
        "apparently",
        "technically",
        "say",
        "says",
        "claim",
    ];
    let w = clause.w();
    if w.is_empty()
        || clause.qualified
        || w.iter()
            .enumerate()
            .any(|(i, x)| PARTIAL.contains(x) && !(*x == "say" && i > 0 && w[i - 1] == "would"))
    {
        return None;
    }
    // A completion under a condition ("if it's fixed on Android too, we can close it", "close
    // it once QA signs off") has not happened yet, and one placed in the distant past ("we
    // fixed a similar bug last year") is history, not news about the work at hand.
    if clause.conditional
        || w.iter().any(|x| CONDITIONS.contains(x))
        || distant_past(&w)
        || deadline(&w)
    {
        return None;
    }
    if let Some(found) = close_request(clause) {
        return Some(found);
    }
    if clause.asks_not_requests() || clause.starts_like_question() {
        return None;
    }
    // "Finished with this one", "done with the export": what follows "with" is what is done.
    // "All done with the party planning", "so finished with this one".
    let lead = w
        .iter()
        .take_while(|x| ["all", "so", "ok", "okay", "and", "well", "now"].contains(*x))
        .count();
    if let [first, "with", rest @ ..] = &w[lead..] {
        if DONE_WORDS.contains(first) && !rest.is_empty() && !clause.negated_before(0) {
            let object = trim_subject(rest);
            if object.iter().all(|x| GENERIC_NOUNS.contains(x)) {
                return Some((String::new(), false));
            }
            return Some((object.join(" "), true));
        }
    }
    // A clause that is only a completion and fillers: "Done.", "all sorted", "that one is
    // fixed", "it works now".
    let bare_done = w
        .iter()
        .any(|x| DONE_WORDS.contains(x) || *x == "set" || *x == "wrap")
        && w.iter().all(|x| {
            DONE_WORDS.contains(x)
                || BARE_FILLERS.contains(x)
                || GENERIC_NOUNS.contains(x)
                || ["set", "out", "up", "the", "ticket"].contains(x)
        });
    if bare_done {
        let at = w.iter().position(|x| DONE_WORDS.contains(x)).unwrap_or(0);
        if !clause.negated_before(at) && !clause.irrealis_before(at) && !done_idiom(&w, at) {
            return Some((String::new(), false));
        }
    }
    for (pattern, anywhere) in DONE_CLAUSES
        .iter()
        .map(|p| (p, false))
        .chain(DONE_ANYWHERE.iter().map(|p| (p, true)))
    {
        if let Some(at) = find_seq(&w, pattern) {
            let rest_is_filler = anywhere
                || w[..at].iter().chain(&w[at + pattern.len()..]).all(|x| {
                    BARE_FILLERS.contains(x)
                        || ["for", "again", "fine", "perfectly", "great", "the"].contains(x)
                });
            if rest_is_filler && !clause.negated_before(at) && !clause.irrealis_before(at) {
                // "That's everything for the tax return" names what is done after "for".
                let after = &w[at + pattern.len()..];
                let named = after
                    .iter()
                    .position(|x| *x == "for" || *x == "with" || *x == "on" || *x == "up")
                    .map(|i| after[i + 1..].join(" "))
                    .filter(|rest| has_content(rest));
                return Some(match named {
                    Some(rest) => (rest, true),
                    None => (String::new(), false),
                });
            }
        }
    }
    // Headline style, without a verb: "party sorted!", "that's the login page done".
    if let Some(found) = headline_done(clause, domain_headlines) {
        return Some(found);
    }
    // "the login page is fixed now", "party is sorted", "we are done with the export".
    for (at, word) in w.iter().enumerate() {
        let completion = done_at(&w, at);
        let domain = DOMAIN_DONE_WORDS.contains(word);
        if !(completion || domain) || at == 0 {
            continue;
        }
        let Some(copula) = copula_before(&w, at) else {
            continue;
        };
        if clause.negated_before(at) || clause.irrealis_before(at) || done_idiom(&w, at) {
            return None;
        }
        let subject = trim_subject(&w[..copula]);
        let after = &w[at + 1..];
        // "we are done with the export", "I'm finished with the slides".
        let with_object = (subject_is_person(subject) && after.first() == Some(&"with"))
            .then(|| after[1..].join(" "))
            .filter(|rest| has_content(rest));
        if let Some(object) = with_object {
            return Some((object, true));
        }
        let generic = subject.iter().all(|x| GENERIC_NOUNS.contains(x));
        if generic {
            if domain && !completion {
                // "It's booked" is a step; only a named effort is concluded by it.
                continue;
            }
            return Some((String::new(), false));
        }
        return Some((subject.join(" "), true));
    }
    // "splitting the bundle fixed it", "we finally cracked the login bug".
    for (at, word) in w.iter().enumerate() {
        // A diary-style report leaves out the "I": "finished the shed", "wrapped up the login
        // page", "fixed it". At the start of a clause the verb needs an object that is plainly
        // one ("fixed costs went up" describes costs).
        let elided_subject = at == 0
            && w.get(1).is_some_and(|next| {
                ["the", "it", "this", "that", "my", "our", "up", "out"].contains(next)
            });
        if !DONE_VERBS.contains(word) || (at == 0 && !elided_subject) {
            continue;
        }
        let before = if at == 0 { "" } else { w[at - 1] };
        if [
            "the", "a", "an", "our", "my", "your", "its", "their", "is", "are", "was", "were",
            "be", "been", "get", "got",
        ]
        .contains(&before)
        {
            continue;
        }
        if clause.negated_before(at) || clause.irrealis_before(at) {
            return None;
        }
        let mut object = &w[at + 1..];
        if object.first().is_some_and(|x| ["out", "up"].contains(x)) {
            object = &object[1..];
        }
        // "We fixed a similar problem on the signup page", "we closed another ticket": what
        // is finished is something other than the efforts, which have names of their own.
        if object
            .first()
            .is_some_and(|x| ["a", "an", "another", "some", "similar", "one", "other"].contains(x))
        {
            continue;
        }
        // "We shipped the fix yesterday": when it happened is not what was finished.
        let object = cut_at(
            object,
            &[
                "by",
                "with",
                "using",
                "after",
                "and",
                "yesterday",
                "today",
                "tonight",
                "earlier",
                "this",
                "last",
            ],
        );
        if object.is_empty() {
            continue;
        }
        let trimmed = trim_subject(object);
        if trimmed.iter().all(|x| GENERIC_NOUNS.contains(x)) {
            return Some((String::new(), false));
        }
        return Some((trimmed.join(" "), true));
    }
    None
}

/// A closing in headline style: a noun, then a completion word that ends the clause ("party
/// sorted", "login page fixed at last", "that's the export done").
fn headline_done(clause: &Clause, domain_headlines: bool) -> Option<(String, bool)> {
    const TRAILING: [&str; 16] = [
        "now",
        "finally",
        "at",
        "last",
        "too",
        "already",
        "then",
        "thanks",
        "cheers",
        "today",
        "yesterday",
        "this",
        "weekend",
        "week",
        "morning",
        "tonight",
    ];
    let w = clause.w();
    let mut end = w.len() - w.iter().rev().take_while(|x| TRAILING.contains(x)).count();
    // "Tax return done and submitted": the first completion word is the one to read.
    if end >= 3
        && w[end - 2] == "and"
        && (DONE_WORDS.contains(&w[end - 1]) || DOMAIN_DONE_WORDS.contains(&w[end - 1]))
    {
        end -= 2;
    }
    let at = end.checked_sub(1)?;
    // "Birthday party planned" finishes the party; "booked" or "planned" after "it" is only a
    // step, which the generic subject below does not conclude.
    let domain =
        domain_headlines && DOMAIN_DONE_WORDS.contains(&w[at]) && !DONE_WORDS.contains(&w[at]);
    if at == 0 || !(DONE_WORDS.contains(&w[at]) || domain) || copula_before(&w, at).is_some() {
        return None;
    }
    if clause.negated_before(at) || clause.irrealis_before(at) {
        return None;
    }
    // What stands before it: without "that is" or "ok", and not a verb's object ("I want it
    // done" is a wish, caught above; "we got the roof done" says it was done).
    let mut subject = &w[..at];
    if let Some(is) = subject.iter().position(|x| *x == "is") {
        if subject[..is]
            .iter()
            .all(|x| GENERIC_NOUNS.contains(x) || BARE_FILLERS.contains(x))
        {
            subject = &subject[is + 1..];
        }
    }
    let subject = trim_subject(subject);
    // "Get the login page fixed", "let's get the party sorted", "keep the list sorted" ask for
    // work still to do.
    const CAUSATIVES: [&str; 14] = [
        "is", "are", "was", "were", "has", "have", "get", "getting", "keep", "make", "let", "like",
        "need", "want",
    ];
    if subject.is_empty() || subject.iter().any(|x| CAUSATIVES.contains(x)) {
        return None;
    }
    if subject.iter().all(|x| GENERIC_NOUNS.contains(x)) {
        return (!domain).then(|| (String::new(), false));
    }
    Some((subject.join(" "), true))
}

/// Whether a clause sets a time by which something is to be done ("we should wrap up by
/// Friday", "done by the end of the week"): what it speaks of is still ahead.
fn deadline(w: &[&str]) -> bool {
    const WHEN: [&str; 12] = [
        "monday",
        "tuesday",
        "wednesday",
        "thursday",
        "friday",
        "saturday",
        "sunday",
        "tomorrow",
        "tonight",
        "next",
        "noon",
        "eod",
    ];
    w.windows(2).any(|p| p[0] == "by" && WHEN.contains(&p[1]))
        || w.windows(3)
            .any(|p| p[0] == "by" && p[1] == "the" && ["end", "weekend"].contains(&p[2]))
}

/// Whether a clause places what it says in the distant past ("last year", "years ago").
fn distant_past(w: &[&str]) -> bool {
    w.iter().any(|x| ["ago", "years", "previously"].contains(x))
        || find_seq(w, &["last", "year"]).is_some()
        || find_seq(w, &["in", "the", "past"]).is_some()
        || find_seq(w, &["back", "then"]).is_some()
}

/// A request to conclude: "close this", "let's wrap up the export", "can you mark it as done?",
/// "call it done".
fn close_request(clause: &Clause) -> Option<(String, bool)> {
    let w = clause.w();
    let mut start = 0;
    'strip: loop {
        for prefix in REQUEST_PREFIXES {
            if w[start..].starts_with(prefix) {
                start += prefix.len();
                continue 'strip;
            }
        }
        break;
    }
    let verb = *w.get(start)?;
    if !CLOSE_VERBS.contains(&verb) || clause.negated_before(start) {
        return None;
    }
    // A question that is not a request ("should we close it?") changes nothing.
    if clause.question
        && !w
            .first()
            .is_some_and(|f| REQUEST_STARTS.contains(f) || *f == "please")
    {
        return None;
    }
    let rest = &w[start + 1..];
    // "We're close to done", "close by", "close enough": an adjective, not a request.
    if rest
        .first()
        .is_some_and(|x| ["to", "by", "enough", "call"].contains(x))
    {
        return None;
    }
    let object: Vec<&str> = match verb {
        // "I'm closing the tab" is about a tab; "closing this one out" is about the work.
        "closing" | "concluding" if rest.is_empty() => return None,
        // "wrap it up", "wrap up the export", "wrap this up".
        "wrap" => {
            let without: Vec<&str> = rest.iter().copied().filter(|x| *x != "up").collect();
            if !rest.contains(&"up") && !rest.is_empty() {
                return None;
            }
            without
        }
        // "mark it (as) done", "mark the export as complete".
        "mark" => {
            let done_at = rest
                .iter()
                .position(|x| DONE_WORDS.contains(x) || *x == "complete")?;
            rest[..done_at]
                .iter()
                .copied()
                .filter(|x| *x != "as")
                .collect()
        }
        // "call it done", "call it a day".
        // "call it done", "I'm calling this one done", "consider it done".
        "call" | "calling" | "consider" | "considering" => {
            let done_at = rest.iter().position(|x| {
                [
                    "done", "finished", "complete", "closed", "resolved", "day", "wrap",
                ]
                .contains(x)
            })?;
            rest[..done_at]
                .iter()
                .copied()
                .filter(|x| *x != "a")
                .collect()
        }
        // "finish up", "finish this off"; "finish the report" is work still to do.
        "finish" => {
            if !matches!(rest, ["up", ..] | ["this" | "it", "off" | "up", ..]) {
                return None;
            }
            Vec::new()
        }
        // "close out the export", "close this effort".
        _ => rest
            .iter()
            .copied()
            .filter(|x| !["out", "off", "up", "now", "please", "down"].contains(x))
            .collect(),
    };
    // "close the window on the settings page": what is closed is the window; "close the gap
    // between desktop and mobile" closes a gap.
    let object = cut_at(
        &object,
        &[
            "between", "with", "and", "to", "into", "about", "under", "over", "by", "now",
            "please", "since", "as", "for", "because", "on", "in", "at", "from", "of", "yet",
        ],
    );
    let object = trim_subject(object);
    if object.iter().all(|x| GENERIC_NOUNS.contains(x)) {
        return Some((String::new(), false));
    }
    Some((object.join(" "), true))
}

/// Whether the completion word at `at` (or the pair starting there) means finished.
fn done_at(w: &[&str], at: usize) -> bool {
    DONE_WORDS.contains(&w[at]) || DONE_PAIRS.iter().any(|pair| w[at..].starts_with(pair))
}

/// Idioms in which a completion word does not mean finished: "done for", "sorted by date",
/// "done by Friday", "over there", "working on".
fn done_idiom(w: &[&str], at: usize) -> bool {
    let next = w.get(at + 1).copied().unwrap_or("");
    match w[at] {
        // "done for", "done by Friday", "done loading", "done talking": not what we mean.
        "done" | "finished" | "completed" | "complete" => {
            [
                "for", "by", "deal", "yet", "once", "before", "in", "using", "via",
            ]
            .contains(&next)
                || (next.len() > 4 && next.ends_with("ing"))
        }
        "sorted" => ["by", "in", "into", "alphabetically", "once"].contains(&next),
        "over" => next != "now" && !next.is_empty() && next != "with",
        "working" => {
            !next.is_empty() && !["now", "again", "fine", "perfectly", "great"].contains(&next)
        }
        "closed" => ["on", "for", "at", "to", "once"].contains(&next) || modifies_a_noun(w, at),
        "fixed" => ["once", "before", "twice"].contains(&next) || modifies_a_noun(w, at),
        "resolved" | "solved" => ["once", "before", "twice"].contains(&next),
        _ => false,
    }
}

/// Whether the word at `at` is an adjective before a noun ("fixed width", "closed source")
/// rather than a completion: the next word is neither a particle, an adverb nor a pronoun.
fn modifies_a_noun(w: &[&str], at: usize) -> bool {
    const AFTER_DONE: [&str; 30] = [
        "now",
        "again",
        "already",
        "finally",
        "for",
        "by",
        "with",
        "and",
        "in",
        "on",
        "at",
        "thanks",
        "too",
        "yet",
        "properly",
        "completely",
        "up",
        "it",
        "so",
        "as",
        "because",
        "after",
        "since",
        "this",
        "that",
        "today",
        "yesterday",
        "thank",
        "though",
        "then",
    ];
    w.get(at + 1)
        .is_some_and(|next| !AFTER_DONE.contains(next) && next.chars().all(char::is_alphabetic))
}

/// Where a copula before the completion word at `at` stands: "is", "are", "'s" (spelled
/// "is"), "got", with adverbs and "been" between.
fn copula_before(w: &[&str], at: usize) -> Option<usize> {
    const BETWEEN: [&str; 18] = [
        "been",
        "all",
        "now",
        "finally",
        "officially",
        "completely",
        "totally",
        "fully",
        "really",
        "properly",
        "basically",
        "pretty",
        "much",
        "already",
        "just",
        "definitely",
        "entirely",
        "absolutely",
    ];
    let mut i = at;
    while i > 0 {
        i -= 1;
        let x = w[i];
        if ["is", "are", "was", "were", "am", "got", "get", "gets"].contains(&x)
            || (x == "have" || x == "has") && w.get(i + 1) == Some(&"been")
        {
            return Some(i);
        }
        if !BETWEEN.contains(&x) {
            return None;
        }
    }
    None
}

/// Whether a trimmed subject is the speaker ("we are done with…").
fn subject_is_person(subject: &[&str]) -> bool {
    matches!(subject, ["we"] | ["i"] | [] | ["you"])
}

/// The words of a subject or object without leading fillers and discourse words.
fn trim_subject<'a>(words: &'a [&'a str]) -> &'a [&'a str] {
    // "I'd say we…", "looks like it…", "I'm pretty sure the…": the frame is not the subject.
    const FRAMES: [&str; 8] = [
        "say", "think", "guess", "believe", "like", "seems", "sure", "reckon",
    ];
    let words = match words.iter().rposition(|x| FRAMES.contains(x)) {
        Some(at) if at + 1 < words.len() => &words[at + 1..],
        _ => words,
    };
    let mut start = 0;
    while start < words.len() && SUBJECT_FILLERS.contains(&words[start]) {
        // "I think we are done": "we" is the subject, "I think" its frame; but a lone "i" is
        // the subject itself.
        if start + 1 == words.len() {
            break;
        }
        start += 1;
    }
    &words[start..]
}

/// `words` up to the first of `stops`.
fn cut_at<'a>(words: &'a [&'a str], stops: &[&str]) -> &'a [&'a str] {
    let end = words
        .iter()
        .position(|x| stops.contains(x))
        .unwrap_or(words.len());
    &words[..end]
}

/// Whether `text` has a word that could name something (not a filler or a generic noun).
fn has_content(text: &str) -> bool {
    text.split_whitespace().any(|x| {
        !GENERIC_NOUNS.contains(&x)
            && !LEADING_FILLERS.contains(&x)
            && !TRAILING_FILLERS.contains(&x)
            && !BARE_FILLERS.contains(&x)
    })
}

/// The first new work named in the message, and whether it was asked for by name.
fn open_in(clauses: &[Clause]) -> Option<(String, bool)> {
    // Whether the person takes a problem on or asks for ideas about it ("I have to fix it",
    // "any ideas?"): a thing that misbehaves is then a problem to work on, not a remark.
    let takes_on = clauses.iter().any(|c| {
        let w = c.w();
        w.contains(&"ideas")
            || find_seq(&w, &["any", "idea"]).is_some()
            || w.windows(2).any(|p| {
                p[0] == "to"
                    && [
                        "fix", "track", "find", "figure", "solve", "sort", "look", "deal", "repair",
                    ]
                    .contains(&p[1])
            })
            || find_seq(&w, &["what", "should", "i", "do"]).is_some()
    });
    for (index, clause) in clauses.iter().enumerate() {
        let w = clause.w();
        // "New task: hiring plan" — the label is a clause of its own, the name the next one.
        // "Starting a new project: a recipe app" — the clause ends on the label.
        // "Plan: learn Spanish", "Goal - a faster build": a lone label word is a label too.
        let lone_label = matches!(
            w.as_slice(),
            ["plan" | "goal" | "task" | "project" | "todo" | "topic" | "idea"]
                | [
                    "plan" | "goal" | "task" | "project" | "todo",
                    "for",
                    "today" | "tomorrow" | "now" | "this",
                    ..
                ]
        );
        if lone_label || LABELS.iter().any(|label| w.ends_with(label)) {
            if let Some(next) = clauses.get(index + 1) {
                // "Task for today: clean up the old git branches" names the branches.
                let next = next.w();
                // The verb goes only when the name would otherwise be cut short.
                let object = ACTION_VERBS
                    .iter()
                    .find(|v| next.starts_with(v) && next.len() > MAX_NAME_WORDS)
                    .map_or(&next[..], |v| &next[v.len()..]);
                let name = trim_name(object, MAX_NAME_WORDS);
                if !name.is_empty() {
                    return Some((name, true));
                }
            }
        }
        // "Next thing on my list is the car insurance renewal": a label, then "is" and the name.
        let listed = matches!(
            w.as_slice(),
            [
                "next" | "new" | "another",
                "thing" | "task" | "item" | "topic" | "project",
                ..
            ]
        );
        if let Some(is) = w.iter().position(|x| *x == "is").filter(|_| listed) {
            let name = trim_name(&w[is + 1..], MAX_NAME_WORDS);
            if !name.is_empty() {
                return Some((name, true));
            }
        }
        if let Some(found) = LABELS.iter().find_map(|label| {
            let at = find_seq(&w, label)?;
            (at == 0 && w.len() > label.len()).then(|| trim_name(&w[label.len()..], MAX_NAME_WORDS))
        }) {
            if !found.is_empty() {
                return Some((found, true));
            }
        }
        // Questions about work ("do we need to fix it?", "what did we figure out…") are not
        // new work; requests in question form ("can we plan the offsite?") are.
        // A problem stated in a question's first clause ("my sourdough won't rise, any idea
        // why?") is still a problem of ours.
        if !clause.starts_like_question() {
            if let Some(name) = stated_problem(
                clause,
                index.checked_sub(1).and_then(|i| clauses.get(i)),
                takes_on,
            ) {
                return Some((name, false));
            }
        }
        let asks =
            (clause.asks_not_requests() && clause.ends_sentence) || clause.starts_like_question();
        if asks {
            continue;
        }
        for opener in EXPLICIT_OPENERS {
            if let Some(at) = find_seq(&w, opener) {
                if clause.negated_before(at) {
                    return None;
                }
                // "Let's talk about what's left" names no new work.
                let object = &w[at + opener.len()..];
                if object.first().is_some_and(|x| {
                    ["what", "how", "why", "where", "when", "which", "whether"].contains(x)
                }) {
                    continue;
                }
                let name = trim_name(object, MAX_NAME_WORDS);
                if !name.is_empty() {
                    return Some((name, true));
                }
            }
        }
        for opener in PROBLEM_OPENERS {
            // Chat and notes leave the subject out: "working on my running plan", "having
            // trouble with the printer".
            let subjectless = match opener {
                ["i", "am", rest @ ..] | ["we", "are", rest @ ..] if !rest.is_empty() => {
                    w.starts_with(rest).then_some(rest.len())
                }
                _ => None,
            };
            let found = find_seq(&w, opener)
                .map(|at| (at, opener.len()))
                .or(subjectless.map(|len| (0, len)));
            if let Some((at, len)) = found {
                if clause.negated_before(at) {
                    return None;
                }
                let mut rest = &w[at + len..];
                // "We need help from design" asks for someone's help, not for help with work.
                if opener.last() == Some(&"help") && rest.first() == Some(&"from") {
                    continue;
                }
                // "I'm working on a cover letter" starts something; "we're working on the fonts
                // now" reports progress on something already known. "I'll be working on the
                // rate limiting from now on" announces it.
                if opener.contains(&"working")
                    && !opener.contains(&"will")
                    && rest.first().is_some_and(|x| {
                        ["the", "it", "this", "that", "those", "these"].contains(x)
                    })
                {
                    continue;
                }
                // "trying to figure out why…", "help me plan…": the verb says how, not what.
                // "help organizing my garage": the gerund says how, not what.
                if opener.last() == Some(&"help")
                    || opener.last() == Some(&"hand")
                    || (opener.last() == Some(&"with") && opener.contains(&"help"))
                {
                    if rest.first() == Some(&"with") {
                        rest = &rest[1..];
                    }
                    if rest
                        .first()
                        .is_some_and(|x| x.len() > 4 && x.ends_with("ing"))
                    {
                        rest = &rest[1..];
                    }
                }
                if opener.last() == Some(&"to") || opener.last() == Some(&"me") {
                    if let Some(verb) = ACTION_VERBS.iter().find(|v| rest.starts_with(v)) {
                        rest = &rest[verb.len()..];
                    } else if opener.last() == Some(&"to") && !rest.is_empty() {
                        rest = &rest[1..];
                        if rest
                            .first()
                            .is_some_and(|x| ["out", "up", "into", "with", "on"].contains(x))
                        {
                            rest = &rest[1..];
                        }
                    } else if rest.first() == Some(&"with") {
                        rest = &rest[1..];
                    }
                }
                let name = problem_name(rest);
                if !name.is_empty() {
                    return Some((name, false));
                }
            }
        }
        // "I'm researching electric cars", "we're redoing the kitchen": an undertaking in
        // progress, named by what follows the verb.
        if let Some(name) = undertaking(clause) {
            return Some((name, false));
        }
        for opener in WORK_OPENERS {
            // "Need to get ready for the driving test": notes leave the "I" out.
            let subjectless = match opener {
                ["i" | "we", rest @ ..] if rest.len() >= 2 && w.starts_with(rest) => {
                    Some(rest.len())
                }
                _ => None,
            };
            let Some(at) = find_seq(&w, opener).or(subjectless.map(|_| 0)) else {
                continue;
            };
            let opener: &[&str] = match subjectless {
                Some(len) if find_seq(&w, opener).is_none() => &opener[opener.len() - len..],
                _ => opener,
            };
            let mut rest = &w[at + opener.len()..];
            // "Let us begin to write…", "I want to start planning…": the aspect is not the work.
            if let ["begin" | "start" | "try" | "starting" | "beginning", "to", more @ ..] = rest {
                rest = more;
            }
            let Some(verb) = ACTION_VERBS.iter().find(|v| rest.starts_with(v)) else {
                // "I need to renew my passport": any verb whose object is the person's own or
                // new ("my", "our", "a") names work, where "the" often points at a detail of
                // the work at hand ("we need to call the bakery").
                let own = ["i", "we"].contains(&opener[0])
                    && opener.len() > 1
                    && ["need", "have", "must", "want", "would"].contains(&opener[1]);
                // A particle may follow the verb ("put together a slide deck").
                let object_at = if rest
                    .get(1)
                    .is_some_and(|x| ["together", "up", "out", "down", "off", "in"].contains(x))
                {
                    2
                } else {
                    1
                };
                if own
                    && rest.len() > object_at + 1
                    && rest[0].chars().all(|c| c.is_ascii_alphabetic())
                    && ["my", "our", "a", "an"].contains(&rest[object_at])
                    && !clause.negated_before(at)
                {
                    let name = trim_name(&rest[object_at + 1..], MAX_NAME_WORDS);
                    if has_content(&name) {
                        return Some((name, false));
                    }
                }
                continue;
            };
            if clause.negated_before(at) {
                return None;
            }
            let object = &rest[verb.len()..];
            let name = if ["figure", "find", "work", "understand"].contains(&verb[0])
                || verb == &["look", "at"]
            {
                problem_name(object)
            } else if object
                .first()
                .is_some_and(|x| ["what", "where", "which", "whether"].contains(x))
            {
                // "Let's talk about what's left" names no new work.
                continue;
            } else {
                trim_name(object, MAX_NAME_WORDS)
            };
            if !name.is_empty() {
                return Some((name, false));
            }
        }
    }
    None
}

/// Verbs of an undertaking in progress after "I am" or "we are".
const UNDERTAKINGS: [&str; 24] = [
    "researching",
    "planning",
    "organizing",
    "organising",
    "preparing",
    "writing",
    "building",
    "designing",
    "developing",
    "creating",
    "renovating",
    "redoing",
    "drafting",
    "investigating",
    "migrating",
    "refactoring",
    "launching",
    "choosing",
    "comparing",
    "redesigning",
    "rewriting",
    "translating",
    "studying",
    "learning",
];

/// An undertaking in progress: "I'm researching electric cars", "we're redoing the kitchen".
fn undertaking(clause: &Clause) -> Option<String> {
    let w = clause.w();
    let at = w.windows(3).position(|p| {
        matches!(p[..2], ["i", "am"] | ["we", "are"]) && UNDERTAKINGS.contains(&p[2])
    })?;
    if clause.negated_before(at + 2) || clause.irrealis_before(at) {
        return None;
    }
    let name = trim_name(&w[at + 3..], MAX_NAME_WORDS);
    (!name.is_empty()).then_some(name)
}

/// Words that say something of ours misbehaves ("my script crashes", "our cluster keeps running
/// out of memory", "the deploy fails on main").
const PROBLEM_WORDS: [&str; 44] = [
    "drains",
    "reboots",
    "restarts",
    "disconnects",
    "drops",
    "overheats",
    "loud",
    "noisy",
    "overheating",
    "dead",
    "clogged",
    "blocked",
    "keep",
    "kept",
    "crashes",
    "crashing",
    "crashed",
    "fails",
    "failing",
    "keeps",
    "broke",
    "broken",
    "hangs",
    "hanging",
    "freezes",
    "froze",
    "frozen",
    "stopped",
    "stops",
    "leaks",
    "leaking",
    "throws",
    "times",
    "slow",
    "down",
    "errors",
    "lags",
    "lagging",
    "flaky",
    "flickers",
    "glitches",
    "wrong",
    "stuck",
    "takes",
];

/// A problem stated without an opener: a clause whose subject is ours ("my", "our") or that
/// follows "we've got a problem", with a word of misbehaviour after it. Its name is the
/// subject and what it does.
fn stated_problem(clause: &Clause, before: Option<&Clause>, takes_on: bool) -> Option<String> {
    let w = clause.w();
    let start = w.iter().position(|x| {
        ![
            "so",
            "hi",
            "hey",
            "ok",
            "okay",
            "well",
            "also",
            "basically",
            "now",
            "and",
        ]
        .contains(x)
    })?;
    let w = &w[start..];
    // "So the thing is our app crashes…", "turns out the printer…": a frame before the subject.
    let w = match w {
        ["the", "thing", "is", rest @ ..] | ["thing", "is", rest @ ..] => rest,
        ["turns", "out", rest @ ..] | ["it", "turns", "out", rest @ ..] => rest,
        _ => w,
    };
    // Where `w` starts in the clause, for the negation checks.
    let start = clause.words.len() - w.len();
    // "There is a memory leak in the payment service": a problem named by its noun.
    if let (["there", "is", "a" | "an", rest @ ..], true) = (w, takes_on) {
        const TROUBLE: [&str; 9] = [
            "leak",
            "bug",
            "error",
            "crash",
            "problem",
            "issue",
            "outage",
            "regression",
            "glitch",
        ];
        if let Some(end) = rest.iter().take(3).position(|x| TROUBLE.contains(x)) {
            if !clause.negated_before(start) {
                let name = problem_name(cut_at(
                    rest,
                    &["that", "which", "we", "i", "when", "because", "since"],
                ));
                if end < rest.len() && !name.is_empty() {
                    return Some(name);
                }
            }
        }
    }
    // "We're getting lots of 500 errors from the checkout API": trouble the person sees, named
    // by where it comes from.
    if let ["i" | "we", "am" | "are", "getting" | "seeing" | "hitting", rest @ ..] = w {
        const SYMPTOMS: [&str; 9] = [
            "errors",
            "error",
            "crashes",
            "timeouts",
            "exceptions",
            "complaints",
            "warnings",
            "failures",
            "bugs",
        ];
        if let Some(at) = rest.iter().take(5).position(|x| SYMPTOMS.contains(x)) {
            let source = match rest.get(at + 1) {
                Some(&("from" | "in" | "on" | "with" | "when")) => trim_name(
                    cut_at(&rest[at + 2..], &["since", "every", "because", "after"]),
                    MAX_NAME_WORDS - 1,
                ),
                _ => String::new(),
            };
            if !clause.negated_before(start) {
                return Some(if source.is_empty() {
                    problem_name(&rest[..=at])
                } else {
                    format!("{source} {}", rest[at])
                });
            }
        }
    }
    // "The kitchen tap has been leaking", "the dishwasher won't drain": a thing that plainly
    // misbehaves is a problem whoever owns it.
    const PLAINLY_WRONG: [&str; 19] = [
        "leaking", "leaks", "crashes", "crashing", "crashed", "broken", "broke", "fails",
        "failing", "hangs", "hanging", "freezes", "froze", "frozen", "stopped", "keeps", "kept",
        "throws", "glitches",
    ];
    let the_subject = takes_on
        && w.first() == Some(&"the")
        && (w.iter().any(|x| PLAINLY_WRONG.contains(x))
            || w.windows(2)
                .any(|p| ["does", "will", "can", "would"].contains(&p[0]) && p[1] == "not"));
    // "The laptop fan is super loud, any ideas?": with a call for ideas, any state of a thing
    // of ours is the problem.
    if takes_on && matches!(w.first(), Some(&("the" | "my" | "our"))) {
        if let Some(is) = w
            .iter()
            .position(|x| ["is", "are"].contains(x))
            .filter(|at| *at > 1)
        {
            let name = problem_name(cut_at(w, &["when", "whenever", "if", "because", "since"]));
            if is + 1 < w.len() && !name.is_empty() && !clause.negated_before(start + is) {
                return Some(name);
            }
        }
    }
    let announced = the_subject
        || before.is_some_and(|b| {
            let b = b.w();
            b.last()
                .is_some_and(|x| ["problem", "issue", "bug", "problems", "issues"].contains(x))
                && b.iter()
                    .any(|x| ["i", "we", "have", "got", "new"].contains(x))
        });
    if !(announced || matches!(w.first(), Some(&"my") | Some(&"our"))) {
        return None;
    }
    let verb = w
        .iter()
        .position(|x| PROBLEM_WORDS.contains(x))
        .or_else(|| {
            // "does not work", "will not load", "can not connect".
            w.windows(2).position(|p| {
                ["does", "do", "will", "can", "is", "are", "would"].contains(&p[0]) && p[1] == "not"
            })
        })?;
    // "won't return my deposit" states the problem by its negation; "never crashes" denies one.
    let denied = w.get(verb + 1) != Some(&"not") && clause.negated_before(verb + start);
    if verb == 0 || denied {
        return None;
    }
    let words = cut_at(w, &["when", "whenever", "if", "every", "because", "since"]);
    let name = problem_name(words);
    (!name.is_empty()).then_some(name)
}

/// The name of a stated problem: its words without question words, auxiliaries or fillers.
fn problem_name(words: &[&str]) -> String {
    let kept: Vec<&str> = words
        .iter()
        .copied()
        .filter(|x| !NAME_SKIPS.contains(x))
        .collect();
    let kept = cut_at(
        &kept,
        &["and", "then", "before", "after", "as", "when", "whenever"],
    );
    trim_name(kept, MAX_PROBLEM_NAME_WORDS)
}

/// A switch in a clause: the target and whether the cue can only mean a switch.
fn switch_in(clause: &Clause, followed: bool) -> Option<(String, bool)> {
    let w = clause.w();
    // "How do I get back to an old topic?" asks how, it does not go anywhere; "I'll come back to
    // the party later" puts the move off.
    if asks_how(&w) || reports_a_question(&w) {
        return None;
    }
    // Whether the move is put off: by words before its cue, or after its target unless they
    // are a reason of their own ("back to the party now that the login is on hold").
    let deferred = |at: usize| {
        let after = &w[at..];
        defers(&w[..at]) || defers(cut_at(after, &["that", "since", "because", "as", "while"]))
    };
    for cue in EXPLICIT_SWITCHES {
        let Some(at) = find_seq(&w, cue) else {
            continue;
        };
        if clause.negated_before(at) {
            return None;
        }
        if deferred(at) {
            return None;
        }
        // "the load time is back to 2 s" or "I'll get back to you" are no switches.
        let rest = &w[at + cue.len()..];
        let rest = rest
            .strip_prefix(&["work", "on"][..])
            .or_else(|| rest.strip_prefix(&["talking", "about"][..]))
            .unwrap_or(rest);
        // "back to what we were doing on the login page", "to where we left off with …".
        let rest = match rest.first() {
            Some(&("what" | "where")) => rest
                .iter()
                .position(|x| ["on", "with", "about", "for"].contains(x))
                .map_or(rest, |at| &rest[at + 1..]),
            _ => rest,
        };
        let target = trim_name(rest, MAX_PROBLEM_NAME_WORDS);
        if target.is_empty() || not_a_target(rest) {
            return None;
        }
        // A cue that starts the clause or follows "let's", "can we", "please" asks to move;
        // elsewhere it may describe a move of the person's own ("I'm going back to my desk"),
        // so it switches only when it names an effort.
        let asked = w[..at].iter().all(|x| {
            [
                "ok", "okay", "so", "alright", "right", "anyway", "now", "and", "please", "then",
            ]
            .contains(x)
        }) || [
            &["let", "us"][..],
            &["can", "we"],
            &["could", "we"],
            &["we", "should"],
            &["i", "want", "to"],
            &["i", "would", "like", "to"],
            &["let", "me"],
        ]
        .iter()
        .any(|p| w[..at].ends_with(p));
        // "Should I switch to the party?" asks for advice, "I will come back to it" promises:
        // neither moves now. A request ("can we go back to…?") does.
        let advice = clause.question
            && !w
                .first()
                .is_some_and(|f| REQUEST_STARTS.contains(f) || ["shall", "why"].contains(f));
        if !asked && (advice || clause.irrealis_before(at)) {
            return None;
        }
        let explicit = asked && !["going", "getting"].contains(&cue[0]);
        return Some((target, explicit));
    }
    // "Back to the login page." at the start of a clause, or anywhere when it names an effort.
    if let Some(at) = find_seq(&w, &["back", "to"]) {
        let rest = &w[at + 2..];
        let target = trim_name(rest, MAX_PROBLEM_NAME_WORDS);
        let leads = w[..at].iter().all(|x| {
            [
                "ok", "okay", "so", "alright", "right", "anyway", "now", "and", "then",
            ]
            .contains(x)
        });
        if !target.is_empty() && !not_a_target(rest) && !clause.negated_before(at) && !deferred(at)
        {
            return Some((target, leads));
        }
    }
    // "Can we look at the tax return again?", "let's talk about the party again".
    if w.last() == Some(&"again") {
        const REVISITS: [&[&str]; 6] = [
            &["look", "at"],
            &["talk", "about"],
            &["go", "over"],
            &["discuss"],
            &["work", "on"],
            &["think", "about"],
        ];
        if let Some((at, verb)) = REVISITS
            .iter()
            .find_map(|v| find_seq(&w, v).map(|at| (at, v)))
        {
            let target = trim_name(&w[at + verb.len()..w.len() - 1], MAX_PROBLEM_NAME_WORDS);
            if !target.is_empty() && !clause.negated_before(at) {
                return Some((target, false));
            }
        }
    }
    // "The login page again.", "party planning time again!", "tax return again please": a
    // bare name with "again" turns back to it. Anything that reads as a verb ("it's slow
    // again", "works again") or a question word makes it a statement or a question instead.
    let bare: &[&str] = match w.as_slice() {
        [head @ .., "again", "please" | "now" | "then"] | [head @ .., "again"] => head,
        // "Login page now.": a short name with "now" alone.
        [head @ .., "now"] if head.len() <= 3 => head,
        _ => &[],
    };
    const NOT_A_NAME: [&str; 24] = [
        "is",
        "are",
        "was",
        "were",
        "be",
        "been",
        "it",
        "works",
        "worked",
        "working",
        "broke",
        "broken",
        "slow",
        "failing",
        "fails",
        "not",
        "still",
        "happened",
        "happening",
        "what",
        "why",
        "how",
        "when",
        "where",
    ];
    if !bare.is_empty()
        && bare.len() <= MAX_PROBLEM_NAME_WORDS
        && !bare
            .iter()
            .any(|x| NOT_A_NAME.contains(x) || VERBISH.contains(x) || DONE_WORDS.contains(x))
    {
        let target = trim_name(bare, MAX_PROBLEM_NAME_WORDS);
        if !target.is_empty() {
            return Some((target, false));
        }
    }
    for cue in SOFT_SWITCHES {
        let Some(at) = find_seq(&w, cue) else {
            continue;
        };
        // Topic markers ("re the login page", "about the party again", "on the login page:")
        // lead a clause; verbs of resuming may follow an opening ("let's pick up the…").
        let topic_marker = ["regarding", "re", "about", "as", "on", "for"].contains(&cue[0]);
        // "about the X again" may stand anywhere. Other markers make a clause of their own
        // before what is said ("for the party, we need balloons"): "For dinner I made pasta"
        // or "On Monday the roofer comes" are no topic markers.
        let again = w.last() == Some(&"again");
        if topic_marker && !(cue[0] == "about" && again) && (at != 0 || !followed) {
            continue;
        }
        // A topic marker leads a question as well as a statement ("about the party again, how
        // many kids?"); a resuming verb in a question asks about resuming.
        if clause.negated_before(at) || (!topic_marker && clause.asks_not_requests()) {
            return None;
        }
        let rest = &w[at + cue.len()..];
        let target = trim_name(
            cut_at(
                rest,
                &["is", "are", "was", "were", "we", "i", "it", "has", "needs"],
            ),
            MAX_PROBLEM_NAME_WORDS,
        );
        if !target.is_empty() && !NOT_TARGETS.contains(&rest.first().copied().unwrap_or("")) {
            return Some((target, false));
        }
    }
    None
}

/// Words that make a clause a report of something happening rather than a bare name.
const VERBISH: [&str; 12] = [
    "tried", "try", "did", "do", "does", "made", "make", "went", "go", "got", "get", "said",
];

/// Whether a clause asks how to do something ("how do I switch…", "how to close…").
fn asks_how(w: &[&str]) -> bool {
    matches!(
        w,
        [
            "how",
            "do" | "can" | "should" | "would",
            "i" | "we" | "you",
            ..
        ] | ["how", "to", ..]
    )
}

/// Whether a clause puts something off ("I'll come back to it later", "the login page can
/// wait", "some other time").
fn defers(w: &[&str]) -> bool {
    w.iter()
        .any(|x| ["later", "afterwards", "tomorrow", "someday"].contains(x))
        || find_seq(w, &["can", "wait"]).is_some()
        || find_seq(w, &["on", "hold"]).is_some()
        || find_seq(w, &["other", "time"]).is_some()
        || find_seq(w, &["another", "time"]).is_some()
        || find_seq(w, &["next", "week"]).is_some()
}

/// Whether a clause reports someone else's question ("my boss asked if it was done", "Sam
/// asked about the party"): it tells of the question, it does not ask to act on it.
fn reports_a_question(w: &[&str]) -> bool {
    const ASKING: [&str; 6] = [
        "asked",
        "asks",
        "asking",
        "wondered",
        "wondering",
        "wonders",
    ];
    const ABOUT: [&str; 7] = ["if", "whether", "about", "when", "how", "what", "why"];
    w.windows(2)
        .any(|p| ASKING.contains(&p[0]) && ABOUT.contains(&p[1]))
        || w.windows(3).any(|p| {
            ASKING.contains(&p[0])
                && ["me", "us", "him", "her", "them"].contains(&p[1])
                && ABOUT.contains(&p[2])
        })
        || find_seq(w, &["wants", "to", "know"]).is_some()
        || find_seq(w, &["wanted", "to", "know"]).is_some()
}

/// Whether what follows "back to" is no effort: a pronoun ("I'll get back to you"), a number
/// ("back to 8 seconds"), an idiom ("back to normal", "back to square one").
fn not_a_target(rest: &[&str]) -> bool {
    let first = rest.first().copied().unwrap_or("");
    first.starts_with(|c: char| c.is_ascii_digit())
        || (NOT_TARGETS.contains(&first)
            && (rest.len() == 1
                || !["it", "that", "this", "them"].contains(&first)
                || rest.get(1).is_some_and(|x| {
                    [
                        "on",
                        "in",
                        "at",
                        "for",
                        "about",
                        "when",
                        "later",
                        "tomorrow",
                        "soon",
                        "today",
                        "tonight",
                        "next",
                        "after",
                        "afterwards",
                        "then",
                        "now",
                    ]
                    .contains(x)
                })))
}

/// Lowercase, with typographic apostrophes made plain and whitespace collapsed.
pub(crate) fn normalise(text: &str) -> String {
    text.to_lowercase()
        .replace(['’', '‘'], "'")
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

/// The normalised text with contractions spelled out, as one string for phrase lookups.
fn spell_out(text: &str) -> String {
    text.split(' ')
        .flat_map(|raw| {
            // Keep the punctuation around a word, spell out the word itself.
            let start = raw.find(|c: char| c.is_alphanumeric()).unwrap_or(raw.len());
            let end = raw.rfind(|c: char| c.is_alphanumeric()).map_or(start, |i| {
                i + raw[i..].chars().next().map_or(1, char::len_utf8)
            });
            let (lead, core, tail) = (
                &raw[..start],
                &raw[start..end.max(start)],
                &raw[end.max(start)..],
            );
            let words = expand(core);
            let last = words.len().saturating_sub(1);
            words
                .into_iter()
                .enumerate()
                .map(|(i, w)| {
                    let mut out = String::new();
                    if i == 0 {
                        out.push_str(lead);
                    }
                    out.push_str(&w);
                    if i == last {
                        out.push_str(tail);
                    }
                    out
                })
                .collect::<Vec<_>>()
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// One word with its contraction spelled out: "isn't" → "is not", "we're" → "we are",
/// "party's" → "party is" (a possessive reads as "is" too, which no pattern here minds).
fn expand(word: &str) -> Vec<String> {
    let whole = |parts: &[&str]| parts.iter().map(|p| (*p).to_string()).collect();
    match word {
        "let's" | "lets" => return whole(&["let", "us"]),
        "won't" | "wont" => return whole(&["will", "not"]),
        "can't" | "cant" | "cannot" => return whole(&["can", "not"]),
        "shan't" => return whole(&["shall", "not"]),
        "ain't" => return whole(&["is", "not"]),
        "im" => return whole(&["i", "am"]),
        // Chat shorthand.
        "u" => return whole(&["you"]),
        "ur" => return whole(&["your"]),
        "pls" | "plz" => return whole(&["please"]),
        "thx" => return whole(&["thanks"]),
        "ive" => return whole(&["i", "have"]),
        "wanna" => return whole(&["want", "to"]),
        "gonna" => return whole(&["going", "to"]),
        "gotta" => return whole(&["got", "to"]),
        "lemme" => return whole(&["let", "me"]),
        "dunno" => return whole(&["do", "not", "know"]),
        "bday" => return whole(&["birthday"]),
        "tmrw" | "tmr" => return whole(&["tomorrow"]),
        "youre" => return whole(&["you", "are"]),
        "theyre" => return whole(&["they", "are"]),
        "thats" => return whole(&["that", "is"]),
        "whats" => return whole(&["what", "is"]),
        "dont" | "doesnt" | "didnt" | "isnt" | "arent" | "wasnt" | "werent" | "havent"
        | "hasnt" | "hadnt" | "wouldnt" | "shouldnt" | "couldnt" => {
            return vec![word[..word.len() - 2].to_string(), "not".to_string()];
        }
        _ => {}
    }
    for (suffix, spelled) in [
        ("n't", "not"),
        ("'m", "am"),
        ("'re", "are"),
        ("'ve", "have"),
        ("'ll", "will"),
        ("'d", "would"),
        ("'s", "is"),
    ] {
        if let Some(stem) = word.strip_suffix(suffix) {
            if !stem.is_empty() {
                return vec![stem.to_string(), spelled.to_string()];
            }
        }
    }
    vec![corrected(word).unwrap_or(word).to_string()]
}

/// The words every reading hangs on, which a typo in would hide the whole message: the
/// completion, recall, help and steering vocabulary.
const VOCABULARY: [&str; 40] = [
    "done",
    "fixed",
    "finished",
    "solved",
    "resolved",
    "sorted",
    "closed",
    "concluded",
    "settled",
    "working",
    "happened",
    "remember",
    "remind",
    "recall",
    "summary",
    "summarise",
    "summarize",
    "help",
    "switch",
    "switching",
    "back",
    "again",
    "effort",
    "efforts",
    "status",
    "what",
    "which",
    "about",
    "continue",
    "return",
    "returning",
    "decided",
    "figured",
    "wrapped",
    "please",
    "problem",
    "issue",
    "finally",
    "think",
    "forgot",
];

/// Real words one slip away from a word of [`VOCABULARY`], which are never corrected.
const REAL_NEAR_VOCABULARY: [&str; 5] = ["stats", "abut", "soled", "sored", "tink"];

/// The word of [`VOCABULARY`] that `word` is a slip of the keyboard for, when it is one: two
/// neighbouring letters swapped ("hlep", "resloved"), or a letter left out inside a word of
/// five letters or more ("fixd", "happend"). A letter left out at either end often makes
/// another real word ("close" → "lose"), so only inner ones count.
fn corrected(word: &str) -> Option<&'static str> {
    if word.len() < 4
        || !word.chars().all(|c| c.is_ascii_lowercase())
        || REAL_NEAR_VOCABULARY.contains(&word)
    {
        return None;
    }
    VOCABULARY
        .iter()
        .copied()
        .find(|known| word != *known && slip_of(word, known))
}

/// Whether `typed` is `meant` with two neighbouring letters swapped or an inner letter left
/// out. Both must be ASCII.
pub(crate) fn slip_of(typed: &str, meant: &str) -> bool {
    let (t, m) = (typed.as_bytes(), meant.as_bytes());
    if t.len() == m.len() && t.len() >= 4 {
        let differ: Vec<usize> = (0..t.len()).filter(|&i| t[i] != m[i]).collect();
        return matches!(differ.as_slice(), [a, b] if *b == a + 1 && t[*a] == m[*b] && t[*b] == m[*a]);
    }
    if t.len() + 1 == m.len() && m.len() >= 5 {
        let Some(gap) = (0..t.len()).find(|&i| t[i] != m[i]) else {
            return false;
        };
        return gap > 0 && t[gap..] == m[gap + 1..];
    }
    false
}

/// The clauses of a normalised message.
fn clauses(text: &str) -> Vec<Clause> {
    let mut out = Vec::new();
    // Where a clause after "but", "though" or "however" starts.
    let mut contrasts: Vec<usize> = Vec::new();
    let mut sentence = String::new();
    let chars: Vec<char> = text.chars().collect();
    let mut push_sentence = |sentence: &mut String, question: bool| {
        let first = spell_out(sentence.trim())
            .split(|c: char| !c.is_alphanumeric())
            .find(|w| !w.is_empty())
            .unwrap_or("")
            .to_string();
        let conditional = CONDITIONS.contains(&first.as_str());
        let start = out.len();
        for part in sentence.split([',', ':', ';', '—', '–', '(', ')', '"']) {
            let spelled = spell_out(part.trim());
            let mut words: Vec<String> = Vec::new();
            for raw in spelled.split_whitespace() {
                let word = raw.trim_matches(|c: char| !c.is_alphanumeric());
                if raw == "-" {
                    flush(&mut out, &mut words, question);
                    continue;
                }
                if word.is_empty() {
                    continue;
                }
                if CLAUSE_BREAKS.contains(&word) {
                    flush(&mut out, &mut words, question);
                    contrasts.push(out.len());
                    continue;
                }
                // Adverbs that stand between the words of a pattern ("I also need to plan…",
                // "we just fixed it") and change nothing it means.
                if [
                    "also",
                    "just",
                    "really",
                    "actually",
                    "basically",
                    "honestly",
                ]
                .contains(&word)
                {
                    continue;
                }
                // "We've got an issue", "I've got to write…": "have got" says "have".
                if word == "got" && words.last().is_some_and(|w| w == "have" || w == "has") {
                    continue;
                }
                words.push(word.to_string());
            }
            flush(&mut out, &mut words, question);
        }
        for clause in &mut out[start..] {
            clause.conditional = conditional;
        }
        if let Some(last) = out[start..].last_mut() {
            last.ends_sentence = true;
        }
        // "It was fixed once, then it broke again", "they say it's resolved, I'm not
        // convinced": a setback later in the sentence takes back what came before it.
        for at in start..out.len() {
            let setback = out[at + 1..].iter().any(|later| later.states_a_setback());
            out[at].qualified |= setback;
        }
        sentence.clear();
    };
    for (i, &c) in chars.iter().enumerate() {
        let next = chars.get(i + 1).copied();
        let ends = match c {
            '?' | '!' | '\n' => true,
            // A full stop ends a sentence, a dot inside "auth.yaml" or "2.5" does not.
            '.' | '…' => next.is_none_or(char::is_whitespace),
            _ => false,
        };
        if ends {
            push_sentence(&mut sentence, c == '?');
        } else {
            sentence.push(c);
        }
    }
    push_sentence(&mut sentence, false);
    for at in contrasts {
        let negated = out.get(at).is_some_and(|c: &Clause| {
            c.words
                .iter()
                .any(|w| NEGATORS.contains(&w.as_str()) || w == "still")
        });
        if negated && at > 0 {
            out[at - 1].qualified = true;
        }
    }
    out
}

fn flush(out: &mut Vec<Clause>, words: &mut Vec<String>, question: bool) {
    // "its fixed now", "its not done": written without the apostrophe, "its" before a state
    // says "it is" ("its summary" stays a possessive).
    // "Is it possible to help me…", "would it be possible to…" ask as "can you" does.
    for polite in [
        &["is", "it", "possible", "to"][..],
        &["would", "it", "be", "possible", "to"],
    ] {
        if words
            .iter()
            .map(String::as_str)
            .take(polite.len())
            .eq(polite.iter().copied())
        {
            words.splice(..polite.len(), ["can".to_string(), "you".to_string()]);
        }
    }
    let mut at = 0;
    while at + 1 < words.len() {
        let next = words[at + 1].as_str();
        let state = DONE_WORDS.contains(&next)
            || DOMAIN_DONE_WORDS.contains(&next)
            || [
                "not", "all", "been", "fine", "ok", "okay", "still", "now", "finally", "already",
                "broken", "slow", "fast", "good", "over", "sorted",
            ]
            .contains(&next);
        if words[at] == "its" && state {
            words[at] = "it".to_string();
            words.insert(at + 1, "is".to_string());
        }
        at += 1;
    }
    if !words.is_empty() {
        out.push(Clause {
            words: std::mem::take(words),
            question,
            conditional: false,
            qualified: false,
            ends_sentence: false,
        });
    }
}

/// First words of a sentence that make all of it a condition.
const CONDITIONS: [&str; 6] = ["if", "once", "when", "unless", "whenever", "until"];

/// Where the word sequence `pattern` first occurs in `words`.
fn find_seq(words: &[&str], pattern: &[&str]) -> Option<usize> {
    if pattern.is_empty() || words.len() < pattern.len() {
        return None;
    }
    words.windows(pattern.len()).position(|w| w == pattern)
}

/// Whether `phrase` occurs in `text` starting and ending at word boundaries.
fn contains_phrase(text: &str, phrase: &str) -> bool {
    let phrase = phrase.trim_end();
    let mut from = 0;
    while let Some(found) = text[from..].find(phrase) {
        let start = from + found;
        let end = start + phrase.len();
        let before = text[..start].chars().next_back();
        let after = text[end..].chars().next();
        let boundary = |c: Option<char>| c.is_none_or(|c| !c.is_alphanumeric() && c != '\'');
        if boundary(before) && boundary(after) {
            return true;
        }
        from = start + phrase.chars().next().map_or(1, char::len_utf8);
    }
    false
}

/// A name from the words after an opener: up to the end of the thought, without leading
/// articles or trailing fillers, at most `max` words.
fn trim_name(words: &[&str], max: usize) -> String {
    let words = cut_at(
        words,
        &[
            "so", "because", "since", "which", "and then", "before", "after", "please",
        ],
    );
    let mut words: Vec<&str> = words.to_vec();
    while words.first().is_some_and(|w| LEADING_FILLERS.contains(w)) {
        words.remove(0);
    }
    // An article inside the kept words that starts a phrase the cut would break ("servers to
    // the new | datacenter") is dropped, with the others, so that the phrase fits; one that would
    // be the last kept word goes with its phrase ("memory leak in the | worker" → "memory
    // leak").
    let is_article = |w: &&str| ["the", "a", "an"].contains(w);
    let broken = words.len() > max
        && words[..max]
            .iter()
            .rposition(is_article)
            .is_some_and(|at| at + 1 < max);
    if broken {
        words.retain(|w| !is_article(w));
    }
    words.truncate(max);
    while words.len() > 1 && words.last().is_some_and(|w| TRAILING_FILLERS.contains(w)) {
        words.pop();
    }
    if words
        .iter()
        .all(|w| GENERIC_NOUNS.contains(w) || TRAILING_FILLERS.contains(w))
    {
        words.clear();
    }
    words.join(" ")
}

/// Words that say nothing about which work a message is about, beyond the stopwords: the
/// vocabulary of managing work itself ("problem", "fixed", "back").
const GENERIC_TOPIC_WORDS: [&str; 81] = [
    "problem", "issue", "bug", "thing", "stuff", "effort", "task", "work", "one", "fix", "fixed",
    "done", "sort", "sorted", "solv", "resolv", "finish", "finished", "clos", "back", "again",
    "let", "get", "go", "ok", "okay", "yes", "now", "today", "pleas", "thank", "think", "need",
    "want", "like", "just", "really", "also", "still", "know", "make", "look", "try", "figur",
    "help", "talk", "start", "new", "good", "great", "time", "mean", "sure", "much", "lot", "day",
    "bit", "yeah", "wait", "well", "actual", "probabl", "mayb", "see", "said", "say", "tell",
    "remind", "rememb", "decid", "got", "take", "put", "going", "come", "last", "earlier", "first",
    "plan", "issu", "don",
];

/// The content words of a text, lightly stemmed ("splitting" and "split" agree, so do "pages"
/// and "page"), for telling which effort a message is about.
pub(crate) fn topic_words(text: &str) -> BTreeSet<String> {
    spell_out(&normalise(text))
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| ccm_core::text::is_salient(w))
        .map(stem)
        .filter(|w| w.chars().count() >= 3 && !GENERIC_TOPIC_WORDS.contains(&w.as_str()))
        .collect()
}

/// A crude English stem: plural and verb endings cut, a doubled last consonant and a final
/// "e" dropped, so that the forms of one word meet.
fn stem(word: &str) -> String {
    let mut w = word.to_string();
    for suffix in ["ies", "ing", "ed", "es", "s", "ly"] {
        if w.len() > suffix.len() + 2 && w.ends_with(suffix) && !w.ends_with("ss") {
            w.truncate(w.len() - suffix.len());
            if suffix == "ies" {
                w.push('y');
            }
            break;
        }
    }
    let bytes = w.as_bytes();
    if bytes.len() > 3 && bytes[bytes.len() - 1] == bytes[bytes.len() - 2] {
        let last = bytes[bytes.len() - 1];
        if !b"aeiouls".contains(&last) {
            w.pop();
        }
    }
    if w.len() > 3 && w.ends_with('e') {
        w.pop();
    }
    w
}

#[cfg(test)]
mod tests {
    use super::*;

    fn intents(text: &str) -> Vec<Intent> {
        detect_intents(text)
    }

    fn closes(text: &str) -> bool {
        intents(text)
            .iter()
            .any(|i| matches!(i, Intent::Close { .. }))
    }

    #[test]
    fn opening_phrases_give_a_clean_name() {
        for (text, name) in [
            (
                "Let's work on the auth bug: users get 401 after an hour.",
                "auth bug",
            ),
            ("Can you help me with my CSV import?", "csv import"),
            ("Let’s work on the billing export now.", "billing export"),
            (
                "I need help with the deploy pipeline - it fails on main",
                "deploy pipeline",
            ),
            (
                "let's work on a very long name for an effort here",
                "very long name",
            ),
        ] {
            let found = intents(text);
            assert!(
                matches!(&found[..], [Intent::Open { name: n, .. }] if n == name),
                "{text}: {found:?}"
            );
        }
    }

    #[test]
    fn closing_phrases_are_whole_words() {
        for text in [
            "Done.",
            "That's resolved, thanks.",
            "OK, we're done with the auth bug.",
            "The export is finished and shipped; we are finished here.",
            "…so that one's fixed.",
            "Party's sorted, we booked the bowling alley",
            "all sorted, we split the bundle",
            "Done. Splitting the bundle fixed it.",
        ] {
            assert!(closes(text), "{text}: {:?}", intents(text));
        }
        for text in [
            "What have we done so far?",
            "Is it undone?",
            "The job is unresolved.",
            "it's not fixed yet",
            "we're not done",
            "is it done?",
            "I haven't figured out the login page",
            "don't close this",
            "the bug is done for when the release ships",
            "It should be fixed by Friday.",
            "Once it's done we can test it.",
            "We're almost done.",
        ] {
            assert!(!closes(text), "{text}: {:?}", intents(text));
        }
    }

    #[test]
    fn a_specific_subject_is_kept_as_the_mention() {
        assert_eq!(
            intents("The login page is fixed now."),
            [Intent::Close {
                mention: "login page".into(),
                specific: true
            }]
        );
    }

    #[test]
    fn several_intents_come_in_acting_order() {
        let found = intents("We're done here. Back to the auth bug, and let's work on docs.");
        assert!(matches!(found[0], Intent::Close { .. }), "{found:?}");
        assert!(
            matches!(&found[1], Intent::Switch { target, explicit: true } if target == "auth bug"),
            "{found:?}"
        );
    }

    #[test]
    fn recall_collapse_and_status() {
        assert_eq!(
            intents("Remind me exactly how we fixed the token expiry?"),
            vec![Intent::Recall {
                query: "Remind me exactly how we fixed the token expiry?".into(),
                details: true
            }]
        );
        assert_eq!(
            intents("What did we decide about the cache?"),
            vec![Intent::Recall {
                query: "What did we decide about the cache?".into(),
                details: false
            }]
        );
        // A statement of what was decided is a fact, not a question about the past.
        assert_eq!(intents("We decided to set the TTL to 86400."), vec![]);
        assert_eq!(intents("Got it, thanks."), vec![Intent::Collapse]);
        // A fix stated with "got it working" is a closing, not the end of a review.
        assert!(
            !intents("Finally got it working — the cron job needed UTC timestamps.")
                .contains(&Intent::Collapse)
        );
        assert_eq!(intents("What's the status?"), vec![Intent::Status]);
        assert_eq!(intents("status please"), vec![Intent::Status]);
        assert_eq!(intents("Status code is 200 but the page is blank."), vec![]);
        assert_eq!(intents("The logs show a timeout at 30 s."), vec![]);
    }

    fn switches(text: &str) -> bool {
        intents(text)
            .iter()
            .any(|i| matches!(i, Intent::Switch { .. }))
    }

    fn recalls(text: &str) -> bool {
        intents(text)
            .iter()
            .any(|i| matches!(i, Intent::Recall { .. }))
    }

    #[test]
    fn completions_are_read_by_meaning() {
        // Slips, shorthand, a subject left out, a headline with a trailing word.
        for text in [
            "ok its fixed now",
            "fixd it",
            "finished the shed",
            "Wrapped up the login page.",
            "that's the party sorted then",
            "Ticket closed, the login page is fast again.",
            "Birthday party planned, everything is booked.",
        ] {
            assert!(closes(text), "{text}: {:?}", intents(text));
        }
        // A condition, the distant past, something other than the work, a slower page.
        for text in [
            "If it's fixed on Android too, we can close it.",
            "We can close it once QA signs off.",
            "We should wrap up by Friday.",
            "We fixed a similar problem last year on the signup page.",
            "We closed another ticket about fonts.",
            "Ticket closed, but the login page is slow again.",
            "Finished my coffee, now back at it.",
        ] {
            let found = intents(text);
            assert!(
                !found.iter().any(|i| matches!(
                    i,
                    Intent::Close {
                        specific: false,
                        ..
                    }
                )),
                "{text}: {found:?}"
            );
        }
    }

    #[test]
    fn moves_are_told_from_mentions() {
        for text in [
            "The login page again.",
            "party planning time again!",
            "re: login page — any ideas on the bundle?",
            "where were we with the login page? let's continue",
            "I'd like to get back to the party organisation.",
        ] {
            assert!(switches(text), "{text}: {:?}", intents(text));
        }
        for text in [
            "I'll come back to the party later.",
            "Should I switch to the party?",
            "It's slow again.",
            "Back to the party tomorrow.",
        ] {
            assert!(!switches(text), "{text}: {:?}", intents(text));
        }
        assert_eq!(
            intents("How do I get back to an old topic?"),
            [Intent::Help]
        );
        assert!(declines("My boss asked if the login page was done."));
        assert!(declines("The login page can wait until Monday."));
        assert!(!declines("The login page loads in 3 seconds."));
    }

    #[test]
    fn questions_about_how_things_were_recall() {
        for text in [
            "I forgot how we solved the login page problem.",
            "How much was the tax refund?",
            "Tell me again about the tax return",
            "Look up the login page notes for me.",
            "what happend with the login page",
        ] {
            assert!(recalls(text), "{text}: {:?}", intents(text));
        }
        for text in [
            "Why did splitting the bundle not fix it?",
            "I don't remember the exact bundle size.",
            "Remind me to call the bakery.",
        ] {
            assert!(!recalls(text), "{text}: {:?}", intents(text));
        }
    }

    #[test]
    fn new_work_is_named_by_what_it_is_about() {
        for (text, name) in [
            (
                "Quick one: need a packing list for a week of camping.",
                "packing list",
            ),
            (
                "We should really do something about the onboarding docs, they're out of date.",
                "onboarding docs",
            ),
            (
                "the wedding seating plan is doing my head in, help",
                "wedding seating plan",
            ),
            (
                "I'm looking at buying an electric bike and can't decide between two models.",
                "electric bike",
            ),
        ] {
            assert_eq!(new_work(text).as_deref(), Some(name), "{text}");
        }
        for text in [
            "I need a break.",
            "A fixed header would help.",
            "Help the team understand the new process.",
            "Should we open a ticket for this?",
            "Maybe we should do a piñata too, any ideas?",
            "I don't need help with the slides.",
        ] {
            assert_eq!(new_work(text), None, "{text}");
        }
    }

    #[test]
    fn slips_of_the_keyboard_are_read_as_meant() {
        assert!(slip_of("hlep", "help"));
        assert!(slip_of("fixd", "fixed"));
        assert!(slip_of("logn", "login"));
        // A letter missing at either end, or two letters changed, is another word.
        assert!(!slip_of("lose", "close"));
        assert!(!slip_of("solve", "solved"));
        assert!(!slip_of("hepp", "help"));
        assert_eq!(corrected("stats"), None);
        assert_eq!(corrected("happend"), Some("happened"));
    }

    #[test]
    fn topic_words_meet_across_forms() {
        let a = topic_words("Splitting the bundles");
        let b = topic_words("we split the bundle");
        assert_eq!(a, b);
        assert!(topic_words("the login page problem").contains("login"));
        assert!(!topic_words("the login page problem").contains("problem"));
    }
}
