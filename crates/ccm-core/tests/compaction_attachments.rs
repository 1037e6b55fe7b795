//! Attachments: counting once, summaries, references, staleness, and lossless compress/expand.

use ccm_core::compaction::{
    detect_references, stale_attachments, Attachment, AttachmentKind, AttachmentMode, NewAttachment,
};
use ccm_core::model::SummarySource;
use ccm_core::text::PreparedText;
use ccm_core::{Encoding, ExactCounter, TokenCounter};
use ccm_test_support::portable_tests;
use std::sync::atomic::{AtomicUsize, Ordering};

#[cfg(target_arch = "wasm32")]
wasm_bindgen_test::wasm_bindgen_test_configure!(run_in_browser);

/// A counter that counts its own calls, to prove that texts are counted once.
struct CountingCounter {
    inner: ExactCounter,
    calls: AtomicUsize,
}

impl TokenCounter for CountingCounter {
    fn count(&self, text: &str) -> u32 {
        self.calls.fetch_add(1, Ordering::SeqCst);
        self.inner.count(text)
    }

    fn name(&self) -> &str {
        "counting"
    }
}

fn counter() -> ExactCounter {
    ExactCounter::new(Encoding::O200kBase)
}

/// A design document of several thousand tokens, with awkward bytes: CRLF line ends, tabs,
/// trailing spaces, non-ASCII text.
fn big_document() -> String {
    let mut text = String::from("# Gateway design\r\n\r\n");
    for i in 0..220 {
        text.push_str(&format!(
            "Section {i}: the gateway routes tenant-{i} traffic through port {} with a timeout of {} ms.\t \r\n",
            8_000 + i,
            i * 7
        ));
        if i % 20 == 0 {
            text.push_str(
                "Größe und Zeitüberschreitung werden pro Mandant konfiguriert — 設定.  \n",
            );
        }
    }
    text
}

fn attach(id: &str, name: &str, text: &str, summary: Option<&str>, at: u64) -> Attachment {
    Attachment::new(
        NewAttachment {
            id,
            name,
            kind: AttachmentKind::File,
            text,
            summary,
            attached_at: at,
        },
        &counter(),
    )
    .unwrap()
}

portable_tests! {
    fn an_attachment_is_counted_once_with_exact_counts_for_both_modes() {
        let text = big_document();
        let counting = CountingCounter { inner: counter(), calls: AtomicUsize::new(0) };
        let mut attachment = Attachment::new(
            NewAttachment { id: "att-1", name: "gateway.md", kind: AttachmentKind::File, text: &text, summary: None, attached_at: 1 },
            &counting,
        )
        .unwrap();
        assert_eq!(counting.calls.load(Ordering::SeqCst), 2, "one count per mode, at creation");
        let exact = counter();
        assert_eq!(attachment.full_tokens, exact.count(&attachment.context_text_for(AttachmentMode::Full)));
        assert_eq!(attachment.compressed_tokens, exact.count(&attachment.context_text_for(AttachmentMode::Compressed)));
        assert!(attachment.full_tokens > 4_000, "several thousand tokens: {}", attachment.full_tokens);
        assert!(attachment.compressed_tokens * 10 < attachment.full_tokens, "{}", attachment.compressed_tokens);
        // Switching modes and rendering never count again.
        attachment.compress();
        let _ = attachment.context_text();
        attachment.expand();
        assert_eq!(counting.calls.load(Ordering::SeqCst), 2);
        assert_eq!(attachment.tokens(), attachment.full_tokens);
    }

    fn compress_then_expand_gives_back_the_exact_bytes() {
        let text = big_document();
        let mut attachment = attach("att-1", "gateway.md", &text, None, 1);
        let full_context = attachment.context_text();
        assert!(full_context.contains(&text), "full mode carries the text verbatim");
        assert!(full_context.starts_with("[Attachment: gateway.md (file, id att-1)]\n"));
        assert!(full_context.ends_with("\n[End of attachment: gateway.md]"));

        assert!(attachment.compress());
        assert!(!attachment.compress(), "compressing twice changes nothing");
        assert_eq!(attachment.mode, AttachmentMode::Compressed);
        let compressed = attachment.context_text();
        assert!(!compressed.contains(&text));
        assert!(compressed.starts_with(&format!(
            "[Attachment: gateway.md (file, id att-1), compressed to a summary; the full text ({} tokens) is stored]\n",
            attachment.full_tokens
        )));
        assert_eq!(attachment.tokens(), attachment.compressed_tokens);

        // The stored record survives serialisation byte for byte, in compressed mode.
        let json = serde_json::to_string(&attachment).unwrap();
        let mut restored: Attachment = serde_json::from_str(&json).unwrap();
        assert!(restored.expand());
        assert_eq!(restored.full_text.as_bytes(), text.as_bytes());
        assert_eq!(restored.context_text().as_bytes(), full_context.as_bytes());
    }

    fn the_extractive_summary_names_the_attachment_and_is_never_empty() {
        let prose = attach("att-1", "gateway.md", &big_document(), None, 1);
        assert_eq!(prose.summary_source, SummarySource::Extractive);
        assert!(prose.summary.starts_with("gateway.md: "), "{}", prose.summary);
        assert!(prose.summary.contains("lines,"), "{}", prose.summary);
        assert!(!prose.keywords.is_empty());

        let table = attach("att-2", "table.csv", "1,2,3\n4,5,6", None, 1);
        assert_eq!(table.summary, "table.csv: 1,2,3 4,5,6 (2 lines, 2 words)");
        let symbols = attach("att-5", "snippet.rs", "x = 1;\ny = 2;\n{}", None, 1);
        assert_eq!(symbols.summary, "snippet.rs: no summarisable prose (3 lines, 7 words)");
        let empty = attach("att-3", "empty.txt", "", None, 1);
        assert_eq!(empty.summary, "empty.txt: no summarisable prose (0 lines, 0 words)");
        assert!(empty.full_tokens > 0, "the header is counted");

        let given = attach("att-4", "notes.txt", "long text", Some("  Meeting notes: ship v2 on Friday.  "), 1);
        assert_eq!(given.summary, "Meeting notes: ship v2 on Friday.");
        assert_eq!(given.summary_source, SummarySource::Provided);
        assert_eq!(given.keywords, ["friday", "meeting", "notes", "ship"]);
    }

    fn bad_input_gets_precise_errors() {
        let make = |id: &str, name: &str, summary: Option<&str>| {
            Attachment::new(
                NewAttachment { id, name, kind: AttachmentKind::PastedText, text: "x", summary, attached_at: 0 },
                &counter(),
            )
            .unwrap_err()
            .to_string()
        };
        assert_eq!(make(" ", "n", None), "an attachment needs a non-empty id");
        assert_eq!(make("att-1", "", None), "attachment 'att-1' needs a non-empty name");
        assert_eq!(
            make("att-1", "n", Some("   ")),
            "the summary given for attachment 'att-1' is empty; give a summary, or omit it to use the extractive summary"
        );
    }

    fn references_by_id_name_or_summary_keywords() {
        let attachment = attach(
            "att-7",
            "gateway.md",
            "irrelevant",
            Some("Gateway design: tenant routing, port allocation and timeouts."),
            1,
        );
        let refers = |text: &str| attachment.is_referenced_by(&PreparedText::new(text), 2);
        assert!(refers("see att-7 please"));
        assert!(refers("What does Gateway.md say?"));
        assert!(refers("how is tenant routing configured?"), "two summary keywords");
        assert!(!refers("what about the routing?"), "one keyword is not enough");
        assert!(!refers("tell me a joke"));

        // A two-letter name would match inside ordinary words, so it never counts.
        let short = attach("a1", "db", "x", Some("Schema notes."), 1);
        assert!(!short.is_referenced_by(&PreparedText::new("feedback about a1 and db"), 2));
    }

    fn detected_references_are_recorded_in_order_without_duplicates() {
        let mut attachments = vec![
            attach("att-1", "gateway.md", "x", Some("Gateway design: tenant routing and ports."), 1),
            attach("att-2", "budget.xlsx", "x", Some("Quarterly budget figures."), 2),
        ];
        assert_eq!(detect_references(&mut attachments, "check gateway.md and budget.xlsx", 5, 2), ["att-1", "att-2"]);
        assert_eq!(detect_references(&mut attachments, "tenant routing again", 3, 2), ["att-1"]);
        assert_eq!(detect_references(&mut attachments, "gateway.md once more", 5, 2), ["att-1"]);
        assert!(detect_references(&mut attachments, "nothing relevant", 6, 2).is_empty());
        assert_eq!(attachments[0].references, [3, 5]);
        assert_eq!(attachments[1].references, [5]);
        assert_eq!(attachments[0].last_referenced(), 5);
    }

    fn an_attachment_goes_stale_after_three_messages_without_reference() {
        let mut attachments = vec![
            attach("att-1", "gateway.md", "x", Some("Gateway design notes."), 10),
            attach("att-2", "budget.xlsx", "x", Some("Budget figures."), 10),
        ];
        // Attaching is the first reference.
        assert_eq!(attachments[0].messages_since_reference(10), 0);
        assert!(!attachments[0].is_stale(12, 3));
        assert!(attachments[0].is_stale(13, 3));
        attachments[0].record_reference(12);
        assert!(!attachments[0].is_stale(14, 3));
        assert!(attachments[0].is_stale(15, 3));
        assert_eq!(stale_attachments(&attachments, 14, 3), ["att-2"]);
        // A compressed attachment is not listed again.
        attachments[1].compress();
        assert!(stale_attachments(&attachments, 14, 3).is_empty());
        assert_eq!(stale_attachments(&attachments, 15, 3), ["att-1"]);
    }

    fn recounting_with_another_tokenizer_updates_both_counts() {
        let text = big_document();
        let mut attachment = attach("att-1", "gateway.md", &text, None, 1);
        let cl100k = ExactCounter::new(Encoding::Cl100kBase);
        attachment.recount(&cl100k);
        assert_eq!(attachment.full_tokens, cl100k.count(&attachment.context_text_for(AttachmentMode::Full)));
        assert_eq!(attachment.compressed_tokens, cl100k.count(&attachment.context_text_for(AttachmentMode::Compressed)));
        assert_eq!(attachment.full_text, text);
    }
}
