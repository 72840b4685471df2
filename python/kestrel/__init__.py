"""Kestrel: export Hugging Face causal LMs to static-shape programs and run them.

    import kestrel
    kestrel.create_default_model("/tmp/tiny")
    kestrel.export("/tmp/tiny", "/tmp/tiny.kst", max_context=256)
    runner = kestrel.Runner("/tmp/tiny.kst")
    print(runner.generate("Once upon a time", max_new_tokens=32, temperature=0).text)
    for piece in runner.stream("The little bird", max_new_tokens=32):
        print(piece, end="", flush=True)
    # A program exported from an instruct checkpoint chats through its own template:
    #   reply = runner.chat([{"role": "user", "content": "Hi!"}])

Errors are kestrel.Error subclasses carrying the message the CLI prints; each also derives from
the built-in exception it stands for (ValueError, OSError, NotImplementedError, RuntimeError).
"""

from __future__ import annotations

import operator
import os
from typing import TYPE_CHECKING, Any, Mapping, Optional, Protocol, Sequence, Union

from ._kestrel import (
    CapacityError,
    CorruptError,
    DelegateInfo,
    Error,
    GenerationConfig,
    GenerationResult,
    GenerationStats,
    InternalError,
    InvalidArgumentError,
    IoError,
    MethodInfo,
    NotFoundError,
    OutOfRangeError,
    Program,
    TensorInfo,
    TextStream,
    Tokenizer,
    UnavailableError,
    UnsupportedError,
    __version__,
    create_default_model,
    export,
)
from . import _kestrel

if TYPE_CHECKING:
    import numpy

__all__ = [
    "BufferAllocator",
    "CapacityError",
    "CorruptError",
    "DelegateInfo",
    "Error",
    "GenerationConfig",
    "GenerationResult",
    "GenerationStats",
    "InternalError",
    "InvalidArgumentError",
    "IoError",
    "MethodInfo",
    "NotFoundError",
    "OutOfRangeError",
    "Program",
    "Runner",
    "TensorInfo",
    "TextStream",
    "Tokenizer",
    "UnavailableError",
    "UnsupportedError",
    "__version__",
    "create_default_model",
    "export",
]

Prompt = Union[str, Sequence[int]]
PathLike = Union[str, "os.PathLike[str]"]


class BufferAllocator(Protocol):
    """What Runner(allocator=...) calls to provide method I/O buffers (runtime::BufferAllocator).

    alignment() and bind() are optional. allocate() returns None (the runner then uses the heap)
    or an object exposing a writable, contiguous buffer of at least `nbytes` bytes whose address
    is a multiple of alignment() (for instance a numpy array or an mmap.mmap). The runner keeps
    that object, reads and writes the tensor in place, and passes it to free() exactly once when
    it is done with it (when the runner is closed or collected, or when allocate's answer cannot
    be used). An exception raised by a hook while the runner loads is raised by Runner().
    """

    def alignment(self) -> int:
        """Byte alignment of every buffer (a power of two); read once. Default 64."""

    def allocate(self, nbytes: int, info: TensorInfo) -> Any:
        """A buffer for the tensor `info` (name, dtype, shape, nbytes), or None."""

    def bind(self, buffer: Any, method: str, index: int, is_input: bool) -> None:
        """Called once per (buffer, method, input or output index) after binding."""

    def free(self, buffer: Any) -> None:
        """Releases a buffer allocate() returned."""


class Runner:
    """Loads a program and generates text from it (the `kestrel run` runner).

    path: the program file. allocator: None (heap), the name of a registered allocator ("heap",
    "memfd", ...), or a BufferAllocator object. threads: threads of the optimized CPU kernels, 0
    for every core. kernels: "optimized" or "portable" (the scalar reference kernels).
    backend_options: runtime options of the backends the program delegates to, by backend, e.g.
    {"qnn": {"library": "stand-in"}} (`kestrel run --backend-option qnn.library=stand-in`).

    A runner holds one session: each generate() continues the conversation the previous ones
    built (multi-turn) until reset(). It takes one request at a time; the GIL is released while
    it generates, and Ctrl-C (KeyboardInterrupt) stops a request between tokens, leaving the
    runner usable.
    """

    def __init__(
        self,
        path: PathLike,
        allocator: Union[None, str, BufferAllocator] = None,
        threads: int = 0,
        kernels: str = "optimized",
        backend_options: Optional[Mapping[str, Mapping[str, Any]]] = None,
    ) -> None:
        self._core = _kestrel.Runner(path, allocator, threads, kernels, _backend_assignments(backend_options))

    def generate(
        self,
        prompt: Prompt,
        max_new_tokens: int = 128,
        *,
        temperature: float = 0.8,
        top_k: int = 40,
        top_p: float = 0.95,
        min_p: float = 0.05,
        repeat_penalty: float = 1.0,
        repeat_last_n: int = 64,
        seed: Optional[int] = None,
        stop: Optional[Sequence[str]] = None,
        add_bos: bool = True,
        ignore_eos: bool = False,
    ) -> GenerationResult:
        """Generates from `prompt` (text, or token ids) after what the session holds.

        temperature 0 is greedy; top_k 0, top_p 1, min_p 0 and repeat_penalty 1 disable those
        filters; seed None picks a random seed (result.seed); generation stops at an end-of-
        sequence token (unless ignore_eos), at one of the `stop` texts or after max_new_tokens.
        """
        return self._core.generate(_prompt(prompt), _config(locals()))

    def stream(
        self,
        prompt: Prompt,
        max_new_tokens: int = 128,
        *,
        temperature: float = 0.8,
        top_k: int = 40,
        top_p: float = 0.95,
        min_p: float = 0.05,
        repeat_penalty: float = 1.0,
        repeat_last_n: int = 64,
        seed: Optional[int] = None,
        stop: Optional[Sequence[str]] = None,
        add_bos: bool = True,
        ignore_eos: bool = False,
    ) -> TextStream:
        """Like generate(), yielding text pieces as they are generated.

        The pieces join to the text generate() returns for the same request; the stream's
        `result` holds the GenerationResult once it has ended.
        """
        return self._core.stream(_prompt(prompt), _config(locals()))

    def chat(
        self,
        messages: Sequence[Mapping[str, Any]],
        max_new_tokens: int = 128,
        *,
        temperature: float = 0.8,
        top_k: int = 40,
        top_p: float = 0.95,
        min_p: float = 0.05,
        repeat_penalty: float = 1.0,
        repeat_last_n: int = 64,
        seed: Optional[int] = None,
        stop: Optional[Sequence[str]] = None,
        ignore_eos: bool = False,
        tools: Optional[Sequence[Any]] = None,
        template_vars: Optional[Mapping[str, Any]] = None,
    ) -> GenerationResult:
        """The assistant's reply to `messages`, through the program's chat template.

        messages: the whole conversation, a list of {"role": ..., "content": ...} dicts (any
        JSON-like values; a system message goes first if wanted). The template renders it as
        transformers' apply_chat_template(..., add_generation_prompt=True) does; the reply stops
        at the template's end-of-turn tokens. The session's cache is kept for the prefix the
        conversation shares with it, so appending the reply (result.text) and the next user
        message to `messages` only prefills the new part (result.reused_tokens). tools and
        template_vars ("documents", "enable_thinking", ...) become template variables.
        Raises NotFoundError when the program has no chat template.
        """
        return self._core.chat(list(messages), _config(locals()), _optional_list(tools), _optional_dict(template_vars))

    def stream_chat(
        self,
        messages: Sequence[Mapping[str, Any]],
        max_new_tokens: int = 128,
        *,
        temperature: float = 0.8,
        top_k: int = 40,
        top_p: float = 0.95,
        min_p: float = 0.05,
        repeat_penalty: float = 1.0,
        repeat_last_n: int = 64,
        seed: Optional[int] = None,
        stop: Optional[Sequence[str]] = None,
        ignore_eos: bool = False,
        tools: Optional[Sequence[Any]] = None,
        template_vars: Optional[Mapping[str, Any]] = None,
    ) -> TextStream:
        """Like chat(), yielding the reply's text pieces as they are generated."""
        return self._core.stream_chat(list(messages), _config(locals()), _optional_list(tools),
                                      _optional_dict(template_vars))

    def render_chat(
        self,
        messages: Sequence[Mapping[str, Any]],
        add_generation_prompt: bool = True,
        *,
        tools: Optional[Sequence[Any]] = None,
        template_vars: Optional[Mapping[str, Any]] = None,
    ) -> str:
        """The prompt text the chat template renders for `messages` (`kestrel chat-template`)."""
        return self._core.render_chat(list(messages), add_generation_prompt, _optional_list(tools),
                                      _optional_dict(template_vars))

    def reset(self) -> None:
        """Clears the session: the next request starts a new conversation."""
        self._core.reset()

    def close(self) -> None:
        """Frees the program and its I/O buffers now (an allocator's free() runs here)."""
        self._core.close()

    def __enter__(self) -> "Runner":
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def last_logits(self) -> Optional["numpy.ndarray"]:
        """Scores of the next token after the last processed one, as a read-only float32 view.

        No copy: the array views the runner's output buffer, changes with the next request
        and is cleared by reset(). None before the first step. generate(ids, max_new_tokens=0)
        runs a prompt without sampling, for evaluation.
        """
        return self._core.last_logits()

    @property
    def tokenizer(self) -> Optional[Tokenizer]:
        """The program's tokenizer (encode/decode), or None when it carries none."""
        return self._core.tokenizer

    @property
    def vocab_size(self) -> int:
        return self._core.vocab_size

    @property
    def max_context(self) -> int:
        """Positions the program's KV cache holds."""
        return self._core.max_context

    @property
    def bos_id(self) -> Optional[int]:
        return self._core.bos_id

    @property
    def eos_ids(self) -> list[int]:
        return self._core.eos_ids

    @property
    def position(self) -> int:
        """Tokens the session has put through the model."""
        return self._core.position

    @property
    def load_ms(self) -> float:
        return self._core.load_ms


_CONFIG_FIELDS = ("max_new_tokens", "temperature", "top_k", "top_p", "min_p", "repeat_penalty", "repeat_last_n",
                  "seed", "stop", "add_bos", "ignore_eos")


def _config(arguments: dict[str, Any]) -> GenerationConfig:
    """The GenerationConfig of a method's keyword arguments (its locals())."""
    values = {name: arguments[name] for name in _CONFIG_FIELDS if name in arguments}
    if values.get("stop") is not None:
        values["stop"] = list(values["stop"])
    return GenerationConfig(**values)


def _backend_assignments(options: Optional[Mapping[str, Mapping[str, Any]]]) -> list[str]:
    """{"qnn": {"library": "stand-in"}} -> ["qnn.library=stand-in"], the CLI's --backend-option form."""
    assignments = []
    for backend, values in (options or {}).items():
        for key, value in values.items():
            if isinstance(value, bool):
                text = "true" if value else "false"
            elif isinstance(value, (set, frozenset, list, tuple)):
                text = ",".join(str(item) for item in value)
            else:
                text = str(value)
            assignments.append(f"{backend}.{key}={text}")
    return assignments


def _optional_list(value: Optional[Sequence[Any]]) -> Optional[list[Any]]:
    return None if value is None else list(value)


def _optional_dict(value: Optional[Mapping[str, Any]]) -> Optional[dict[str, Any]]:
    return None if value is None else dict(value)


def _prompt(prompt: Prompt) -> Union[str, list[int]]:
    if isinstance(prompt, str):
        return prompt
    if isinstance(prompt, (bytes, bytearray)):
        raise TypeError("prompt must be str or a sequence of token ids, not bytes")
    return [operator.index(token) for token in prompt]
