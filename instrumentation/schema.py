"""The trace schema: every span attribute key citeline writes, and the values it enumerates.

``citeline.instrumentation.schema`` is a supported, public module: the decorators write these
keys and the analyzer (its Python and, as JSON paths, the SQL in ``queries/``) reads them, so it
is the one contract both halves import (as OpenInference's ``semconv`` is for its instrumentors
and Phoenix). The ``citeline.*`` keys form the versioned schema the analyzer joins on
(``docs/trace-schema.md``); the OpenInference keys make Phoenix render each stage natively. No
other module spells a key inline (``tests/test_schema.py`` checks the analyzer and the SQL).

Keys are ``Final`` string constants with a docstring each, as OpenTelemetry's own semantic
conventions are; a value that is one of a fixed set is an :class:`enum.StrEnum` (:class:`Stage`,
:class:`OpenInferenceSpanKind`, :class:`MimeType`, :class:`AnswerFormat`, :class:`ChunksFrom`),
written to a span as its ``.value`` so the attribute is a plain string. Standard library only:
this module runs inside the host app.
"""

from collections.abc import Mapping
from enum import StrEnum
from types import MappingProxyType
from typing import Final

SCHEMA_VERSION: Final = "1"
"""Version of the ``citeline.*`` attribute schema; bumped on any breaking change."""


class Stage(StrEnum):
    """The value of ``citeline.stage``: which link of the evidence chain a span records."""

    REQUEST = "request"
    """The request span: the question, who asked, the gold case it answers."""
    RETRIEVAL = "retrieval"
    """``@retrieval``: the chunks a search returned."""
    CONTEXT = "context"
    """``@context_assembly``: the ordered chunks sent to the model and the label each got."""
    GENERATION = "generation"
    """``@generation``: the answer, with markers or structured claims, and the label map in force."""
    RESOLUTION = "resolution"
    """``@resolution``: each marker as the app resolved it to a chunk."""
    RENDER = "render"
    """``@render``: the citations the user sees."""


class OpenInferenceSpanKind(StrEnum):
    """The value of ``openinference.span.kind`` citeline writes (Phoenix renders a span by its kind)."""

    CHAIN = "CHAIN"
    """Request, resolution and render."""
    RETRIEVER = "RETRIEVER"
    """Retrieval."""
    RERANKER = "RERANKER"
    """Context assembly (an ordered subset of the retrieved documents)."""
    LLM = "LLM"
    """Generation."""


STAGE_KIND: Final[Mapping[str, OpenInferenceSpanKind]] = MappingProxyType(
    {
        Stage.REQUEST: OpenInferenceSpanKind.CHAIN,
        Stage.RETRIEVAL: OpenInferenceSpanKind.RETRIEVER,
        Stage.CONTEXT: OpenInferenceSpanKind.RERANKER,
        Stage.GENERATION: OpenInferenceSpanKind.LLM,
        Stage.RESOLUTION: OpenInferenceSpanKind.CHAIN,
        Stage.RENDER: OpenInferenceSpanKind.CHAIN,
    }
)
"""The OpenInference span kind of each stage's span, by :class:`Stage` (or its value)."""


class MimeType(StrEnum):
    """The value of ``input.mime_type`` / ``output.mime_type``."""

    TEXT = "text/plain"
    """Plain text."""
    JSON = "application/json"
    """A JSON display blob."""


class AnswerFormat(StrEnum):
    """The value of ``citeline.generation.format``."""

    PROSE = "prose"
    """Markers in the answer text (``[2]``), read with the label grammar of ``citeline.instrumentation.labels``."""
    STRUCTURED = "structured"
    """Claims naming chunk ids (``citeline.generation.claims.text`` and the evidence arrays)."""


class ChunksFrom(StrEnum):
    """The value of ``citeline.context.chunks_from``: where a context step that returned a prompt got the chunks
    looked for in it."""

    ARGUMENTS = "arguments"
    """The chunks handed to the step."""
    RETRIEVAL = "retrieval"
    """The request's last retrieval (the step was handed none)."""


# --- citeline schema: every span -------------------------------------------------
CL_SCHEMA: Final = "citeline.schema_version"
"""Schema version string, on every citeline span."""
CL_STAGE: Final = "citeline.stage"
"""The stage the span records: a :class:`Stage` (request, retrieval, context, generation, resolution, render)."""
CL_DROPPED_DOCS: Final = "citeline.openinference.documents_omitted"
"""How many chunks were left out of the OpenInference document list to fit span limits."""
CL_ADAPTER_ERROR: Final = "citeline.adapter_error"
"""Set when the stage's output could not be read; the span is kept, its chunks are not."""
CL_PERTURBATION: Final = "citeline.perturbation"
"""Set only by the perturbation harness: the perturbation that changed this stage's return value."""
CL_PERTURBATION_DETAIL: Final = "citeline.perturbation.detail"
"""Set with citeline.perturbation: what the harness changed, in one line (display only)."""

# --- citeline schema: request span ---------------------------------------------
CL_QUESTION: Final = "citeline.request.question"
"""The user's question as the app received it."""
CL_CASE_ID: Final = "citeline.request.case_id"
"""Optional gold case id this request answers."""
CL_PRINCIPAL_ID: Final = "citeline.request.principal.id"
"""Who asked."""
CL_PRINCIPAL_GROUPS: Final = "citeline.request.principal.groups"
"""Groups of the principal (string array), matched against chunk ACLs; absent when the app named none
(unknown), [] for a principal with no groups (a guest)."""
CL_AS_OF: Final = "citeline.request.as_of"
"""ISO date the answer must hold for."""
CL_SERVICE: Final = "citeline.request.service"
"""The service_name given to configure(): a joined provider keeps its own resource."""

# --- citeline schema: chunk arrays (retrieval and context spans) -----------------
CL_CHUNK_COUNT: Final = "citeline.chunks.count"
"""Number of chunks in the parallel arrays below."""
CL_CHUNK_DOC_ID: Final = "citeline.chunks.doc_id"
"""Document id of each chunk (string array, '' when unknown)."""
CL_CHUNK_ID: Final = "citeline.chunks.chunk_id"
"""Chunk id of each chunk (string array)."""
CL_CHUNK_VERSION: Final = "citeline.chunks.version"
"""Version of each chunk (string array, '' when unknown)."""
CL_CHUNK_HASH: Final = "citeline.chunks.content_hash"
"""Content hash of each chunk's text (string array, '' when no text)."""
CL_CHUNK_SCORE: Final = "citeline.chunks.score"
"""Retrieval score of each chunk (float array, NaN when unknown)."""
CL_CHUNK_URI: Final = "citeline.chunks.uri"
"""Source uri of each chunk (string array, '' when unknown)."""
CL_CHUNK_TITLE: Final = "citeline.chunks.title"
"""Title of each chunk (string array, '' when unknown)."""
CL_CHUNK_LABEL: Final = "citeline.chunks.label"
"""Context only: the label the model saw for each chunk (string array)."""
CL_CHUNK_TEXT: Final = "citeline.chunks.text"
"""Text of each chunk (string array); only when record_content is on."""
CL_INPUT_HASH: Final = "citeline.input.content_hash"
"""record_content off: the content hash of the stage's text input (a query, a prompt) that is not recorded."""
CL_INPUT_LENGTH: Final = "citeline.input.length"
"""record_content off: the length in characters of the stage's text input that is not recorded."""
CL_CHUNK_ACL_GROUP: Final = "citeline.chunks.acl_group"
"""The groups allowed to see each chunk, all chunks' lists one after another (string array); ids of
groups only, never text. Only when the app's chunks carry an ACL (acl / groups / allowed_groups)."""
CL_CHUNK_ACL_COUNT: Final = "citeline.chunks.acl_count"
"""How many of citeline.chunks.acl_group belong to each chunk, in chunk order; -1 for a chunk with no ACL
(int array, parallel to the other chunk arrays)."""
CL_DERIVED_IDS: Final = "citeline.chunks.derived_ids"
"""How many chunk ids citeline derived (source, offset, content hash) because the app gave none."""
CL_CONTEXT_FROM: Final = "citeline.context.chunks_from"
"""Context only, when the step returned a prompt: where the chunks looked for came from, a :class:`ChunksFrom`."""
CL_CONTEXT_CANDIDATES: Final = "citeline.context.candidates"
"""Context only, when the step returned a prompt: how many chunks were looked for in it."""

# --- citeline schema: generation span ------------------------------------------
CL_ANSWER: Final = "citeline.generation.answer"
"""The raw answer text, markers included."""
CL_ANSWER_FORMAT: Final = "citeline.generation.format"
"""An :class:`AnswerFormat`: 'prose' (markers in text) or 'structured' (claims naming chunk ids)."""
CL_ABSTAINED: Final = "citeline.generation.abstained"
"""True/False when the app said so explicitly; absent otherwise."""
CL_CLAIM_TEXT: Final = "citeline.generation.claims.text"
"""Structured answers: the text of each claim (string array)."""
CL_EVIDENCE_CLAIM: Final = "citeline.generation.evidence.claim_index"
"""Structured answers: the claim index each evidence row belongs to (int array)."""
CL_EVIDENCE_CHUNK: Final = "citeline.generation.evidence.chunk_id"
"""Structured answers: the chunk id each evidence row names (string array)."""
CL_EVIDENCE_QUOTE: Final = "citeline.generation.evidence.quote"
"""Structured answers: the quote each evidence row gives, '' when none (string array)."""
CL_EVIDENCE_QUOTE_HASH: Final = "citeline.generation.evidence.quote_hash"
"""Structured answers with record_content off: the content hash of each quote, '' when none (string
array); the quotes themselves are then '' in citeline.generation.evidence.quote."""
CL_LABEL_MAP_LABEL: Final = "citeline.generation.context.label"
"""The label -> chunk map in force at generation time: labels (string array)."""
CL_LABEL_MAP_CHUNK: Final = "citeline.generation.context.chunk_id"
"""... and the chunk id each label meant (string array, parallel)."""
CL_LABEL_MAP_DOC: Final = "citeline.generation.context.doc_id"
"""... and the doc id each label meant (string array, parallel)."""
CL_LABEL_MAP_VERSION: Final = "citeline.generation.context.version"
"""... and the version each label meant (string array, parallel)."""

# --- citeline schema: resolution span -------------------------------------------
CL_RES_MARKER: Final = "citeline.resolution.marker"
"""Marker as it appears in the answer, e.g. '2' (string array)."""
CL_RES_DOC: Final = "citeline.resolution.doc_id"
"""Doc id the app resolved each marker to (string array)."""
CL_RES_CHUNK: Final = "citeline.resolution.chunk_id"
"""Chunk id the app resolved each marker to (string array)."""
CL_RES_VERSION: Final = "citeline.resolution.version"
"""Version the app resolved each marker to (string array)."""
CL_RES_URI: Final = "citeline.resolution.uri"
"""Uri the app resolved each marker to (string array)."""

# --- citeline schema: render span ------------------------------------------------
CL_REN_LABEL: Final = "citeline.render.label"
"""Label the user sees (string array)."""
CL_REN_URI: Final = "citeline.render.uri"
"""Link target the user can open (string array)."""
CL_REN_PREVIEW: Final = "citeline.render.preview"
"""Render: the preview text shown with each link, '' when none (string array; only with content on)."""
CL_REN_TITLE: Final = "citeline.render.title"
"""Title shown next to the label (string array)."""
CL_REN_DOC: Final = "citeline.render.doc_id"
"""Doc id behind the label, '' when the page does not know it (string array)."""
CL_REN_CHUNK: Final = "citeline.render.chunk_id"
"""Chunk id behind the label, '' when unknown (string array)."""
CL_REN_VERSION: Final = "citeline.render.version"
"""Version behind the label, '' when unknown (string array)."""

# --- OpenInference -----------------------------------------------------------------
OI_PROJECT_NAME: Final = "openinference.project.name"
"""Resource attribute: the Phoenix project spans land in (configure(project=...), else the service name)."""
OI_SPAN_KIND: Final = "openinference.span.kind"
"""OpenInference span kind, an :class:`OpenInferenceSpanKind` (:data:`STAGE_KIND` says which stage has which)."""
OI_INPUT_VALUE: Final = "input.value"
"""Stage input as shown by Phoenix."""
OI_INPUT_MIME: Final = "input.mime_type"
"""Mime type of input.value, a :class:`MimeType`."""
OI_OUTPUT_VALUE: Final = "output.value"
"""Stage output as shown by Phoenix."""
OI_OUTPUT_MIME: Final = "output.mime_type"
"""Mime type of output.value, a :class:`MimeType`."""
OI_RETRIEVAL_DOCUMENTS: Final = "retrieval.documents"
"""Prefix of the flattened retrieved documents list."""
OI_RERANKER_OUTPUT_DOCUMENTS: Final = "reranker.output_documents"
"""Prefix of the flattened reranker output list (our context assembly)."""
OI_RERANKER_QUERY: Final = "reranker.query"
"""Query the reranker ordered documents for."""
OI_DOC_ID: Final = "document.id"
"""Per-document id suffix."""
OI_DOC_SCORE: Final = "document.score"
"""Per-document score suffix."""
OI_DOC_CONTENT: Final = "document.content"
"""Per-document content suffix."""
OI_DOC_METADATA: Final = "document.metadata"
"""Per-document metadata suffix (JSON string)."""
OI_USER_ID: Final = "user.id"
"""OpenInference user id, set from the principal."""
OI_METADATA: Final = "metadata"
"""OpenInference metadata JSON blob (display only)."""

# --- content, as other instrumentors write it (record_content=False filters these) ---------
CONTENT_KEYS: Final = frozenset(
    {
        OI_INPUT_VALUE,
        OI_OUTPUT_VALUE,
        OI_RERANKER_QUERY,
        "llm.prompts",
        "llm.prompt_template.template",
        "llm.prompt_template.variables",
        "tool.parameters",
        "gen_ai.prompt",
        "gen_ai.completion",
        "gen_ai.input.messages",
        "gen_ai.output.messages",
        "gen_ai.system_instructions",
        "gen_ai.tool.call.arguments",
        "gen_ai.tool.call.result",
        "db.statement",
        "db.query.result.document",
        "traceloop.entity.input",
        "traceloop.entity.output",
        "db.query.text",
        "exception.message",
        "exception.stacktrace",
    }
)
"""Attribute keys (OpenInference, OpenTelemetry GenAI and DB conventions, exception events) whose
value is text someone wrote: prompts, messages, queries, tool arguments, error messages."""
CONTENT_PREFIXES: Final = (
    "llm.input_messages.",
    "llm.output_messages.",
    "gen_ai.prompt.",
    "gen_ai.completion.",
    "embedding.",
)
"""Key prefixes under which everything is content (flattened messages, embedded texts and vectors)."""
CONTENT_SUFFIXES: Final = (".document.content", ".message.content", ".message_content.text", ".function.arguments")
"""Key endings that are content wherever they occur (a retrieved document's text, a message's)."""
CONTENT_ID_SUFFIXES: Final = (".id", "_id", ".role", ".finish_reason", ".score", ".distance")
"""Key endings never content, also under a content prefix: ids (a tool call's, a document's), roles,
finish reasons and scores stay with content off (``gen_ai.completion.0.tool_calls.0.id``)."""
GENAI_RETRIEVAL_DOCUMENTS: Final = "gen_ai.retrieval.documents"
"""A GenAI retrieval span's documents, JSON ``[{"id", "score", "content", ...}]`` (content when captured):
with content off each document keeps all but its content."""
CONTENT_FIELDS: Final = frozenset({"content", "arguments", "result", "response", "text"})
"""Fields of a structured value (a GenAI message part, a log record's body, a retrieval document)
that hold content."""
GENAI_INPUT_MESSAGES: Final = "gen_ai.input.messages"
"""GenAI conventions: the messages the model was given, JSON ``[{"role", "parts": [{"type": "text",
"content"}, ...]}]`` on a span, the structured value on a log record."""
GENAI_OUTPUT_MESSAGES: Final = "gen_ai.output.messages"
"""GenAI conventions: the messages the model answered, same shape (tool calls as ``{"type":
"tool_call", "arguments"}``)."""
GENAI_SYSTEM_INSTRUCTIONS: Final = "gen_ai.system_instructions"
"""GenAI conventions: the system instructions, JSON ``[{"type": "text", "content"}]``."""
GENAI_LOG_CONTENT_KEYS: Final = (GENAI_INPUT_MESSAGES, GENAI_OUTPUT_MESSAGES, GENAI_SYSTEM_INSTRUCTIONS)
"""The content a GenAI log record carries for its span (ingest adds it to the span's attributes)."""
GENAI_DETAILS_EVENT: Final = "gen_ai.client.inference.operation.details"
"""Log record event name: one inference's content (messages, system instructions) for its span."""
GENAI_CHOICE_EVENT: Final = "gen_ai.choice"
"""Older per-message log event: one output choice (body ``{index, finish_reason, message}``)."""
GENAI_MESSAGE_EVENT_PREFIX: Final = "gen_ai."
"""Older per-message log events start so: ``gen_ai.{system,user,assistant,tool}.message``."""
GENAI_MESSAGE_EVENT_SUFFIX: Final = ".message"
"""... and end so (body ``{content, ...}``)."""
EVENT_NAME: Final = "event.name"
"""Log record attribute naming the event, as SDKs wrote it before ``eventName`` became a field."""

# --- user feedback on an answer (a span event; issue #22) --------------------------------
CL_FEEDBACK_EVENT: Final = "citeline.feedback"
"""Name of the span event a user report is recorded as (on the request span, or on a late span of
the same trace when the report comes after the request ended)."""
CL_FEEDBACK_TEXT: Final = "citeline.feedback.text"
"""What the user said, e.g. 'this source does not say that'."""
CL_FEEDBACK_CLAIM: Final = "citeline.feedback.claim"
"""The claim of the answer the report is about (its text), '' when the report is about the answer."""
CL_FEEDBACK_CHUNK: Final = "citeline.feedback.chunk_id"
"""The chunk the report is about (a cited source), '' when none."""

# --- OpenTelemetry GenAI semantic conventions, as the analyzer reads them (docs/genai.md) ---------
GENAI_OPERATION: Final = "gen_ai.operation.name"
"""What a GenAI span did: chat, text_completion, generate_content (an inference: the generation) or
retrieval."""
DB_QUERY_RESULT_EVENT: Final = "db.query.result"
"""OpenLLMetry's vector-store span event, one per hit: db.query.result.id, .document, .distance, .metadata."""

# --- evaluation events: written by `citeline export`, never by the instrumentation -------------------
# OpenTelemetry GenAI semantic conventions, event gen_ai.evaluation.result (development status): one
# OTLP log record per verdict, carrying the trace and span id of the span it judges (docs/otel-export.md).
GENAI_EVALUATION_EVENT: Final = "gen_ai.evaluation.result"
"""The event name of an evaluation result (the log record's event_name)."""
GENAI_EVALUATION_NAME: Final = "gen_ai.evaluation.name"
"""Which evaluation: 'citeline' for a claim verdict, 'citeline.trace' for a trace's verdict."""
GENAI_EVALUATION_SCORE_LABEL: Final = "gen_ai.evaluation.score.label"
"""The verdict: the claim's bucket (or the trace's verdict), e.g. ok, retrieval_miss."""
GENAI_EVALUATION_SCORE_VALUE: Final = "gen_ai.evaluation.score.value"
"""1.0 for ok, 0.0 for a failing bucket; absent for not_evaluable (nothing could be judged)."""
GENAI_EVALUATION_EXPLANATION: Final = "gen_ai.evaluation.explanation"
"""The claim (gold claim id and its text) and the reason for its bucket, in one line."""
CL_EVAL_RUN_ID: Final = "citeline.run.id"
"""The analyze run the verdict comes from."""
CL_EVAL_JUDGE: Final = "citeline.judge"
"""The support judge of that run (rules, nli, llm, ...)."""
CL_EVAL_KEY: Final = "citeline.verdict.key"
"""Stable per run: the verdict's key in the store's exported table (what makes an export idempotent)."""
CL_EVAL_CASE_ID: Final = "citeline.case.id"
"""The gold case the trace answered (absent on the corpus basis)."""
CL_EVAL_CLAIM_ID: Final = "citeline.claim.id"
"""The gold claim the verdict is about (absent for a claim the gold set does not name)."""
CL_EVAL_CLAIM_TEXT: Final = "citeline.claim.text"
"""The claim as the answer stated it (absent for an abstention)."""
CL_EVAL_STAGE: Final = "citeline.verdict.stage"
"""The stage where the chain broke (retrieval, context, generation, resolution, render); absent for ok."""
CL_EVAL_FLAGS: Final = "citeline.verdict.flags"
"""Secondary findings on the claim (string array), e.g. also_ungrounded."""
CL_EVAL_BASIS: Final = "citeline.verdict.basis"
"""What the verdict was judged against: gold (its gold case) or corpus (the corpus alone)."""
CL_EVAL_ON_REQUEST: Final = "citeline.verdict.on_request_span"
"""True when the record sits on the request span because no span broke the chain (ok claims, traces)."""
