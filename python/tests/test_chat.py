"""Runner.chat / stream_chat / render_chat: the program's chat template, against the CLI and
an independent jinja2 rendering."""

import json
import os
import unittest

from jinja2.sandbox import ImmutableSandboxedEnvironment

import kestrel
from support import ModelFixture, run_cli

TEMPLATE = (
    "{{ bos_token }}{% if tools %}tools: {{ tools | length }}\n{% endif %}"
    "{% for m in messages %}<|{{ m['role'] }}|>\n{{ m['content'] }}{% if enable_thinking is defined and "
    "not enable_thinking %} /no_think{% endif %}{{ '\\n' }}{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>{{ '\\n' }}{% endif %}"
)
TOKENIZER_CONFIG = {"chat_template": TEMPLATE, "bos_token": "<|begin_of_text|>", "eos_token": "<|end_of_text|>",
                    "add_bos_token": False}
CONVERSATION = [{"role": "system", "content": "You are a small bird."},
                {"role": "user", "content": "Where is the wind going?"}]

fixture = None
chat_program = None


def setUpModule():
    global fixture, chat_program
    fixture = ModelFixture(max_context=256)
    with open(os.path.join(fixture.checkpoint, "tokenizer_config.json"), "w") as f:
        json.dump(TOKENIZER_CONFIG, f)
    chat_program = fixture.path("chat.kst")
    kestrel.export(fixture.checkpoint, chat_program, max_context=256, prefill_step=16)


def tearDownModule():
    fixture.remove()


def jinja2_render(messages, add_generation_prompt=True, **variables):
    # As transformers compiles chat templates.
    environment = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)
    return environment.from_string(TEMPLATE).render(messages=messages, add_generation_prompt=add_generation_prompt,
                                                    bos_token="<|begin_of_text|>", eos_token="<|end_of_text|>",
                                                    **variables)


def write_messages(messages):
    path = fixture.path("messages.json")
    with open(path, "w") as f:
        json.dump(messages, f)
    return path


class ChatTest(unittest.TestCase):
    def setUp(self):
        self.runner = kestrel.Runner(chat_program)

    def test_render_matches_jinja2_and_the_cli(self):
        self.assertEqual(self.runner.render_chat(CONVERSATION), jinja2_render(CONVERSATION))
        self.assertEqual(self.runner.render_chat(CONVERSATION, add_generation_prompt=False),
                         jinja2_render(CONVERSATION, add_generation_prompt=False))
        tools = [{"type": "function", "function": {"name": "fly", "parameters": {}}}]
        self.assertEqual(self.runner.render_chat(CONVERSATION, tools=tools, template_vars={"enable_thinking": False}),
                         jinja2_render(CONVERSATION, tools=tools, enable_thinking=False))
        self.assertIn("tools: 1", self.runner.render_chat(CONVERSATION, tools=tools))
        code, out, err = run_cli("chat-template", chat_program, "--messages", write_messages(CONVERSATION))
        self.assertEqual(code, 0, err)
        self.assertEqual(out.rstrip("\n"), self.runner.render_chat(CONVERSATION).rstrip("\n"))

    def test_reply_matches_the_cli(self):
        for temperature, seed in ((0.0, 3), (0.9, 11)):
            with self.subTest(temperature=temperature):
                self.runner.reset()
                reply = self.runner.chat(CONVERSATION, max_new_tokens=24, temperature=temperature, seed=seed)
                code, out, err = run_cli("run", chat_program, "--messages", write_messages(CONVERSATION), "--json",
                                         "-n", "24", "--temperature", str(temperature), "--seed", str(seed))
                self.assertEqual(code, 0, err)
                cli = json.loads(out)
                self.assertEqual(reply.text, cli["text"])
                self.assertEqual(reply.token_ids, cli["token_ids"])
                self.assertEqual(reply.prompt_token_ids, cli["prompt_token_ids"])
                self.assertEqual(reply.stop_reason, cli["stop_reason"])
                self.assertEqual(reply.chat_prompt, cli["prompt"])
                self.assertEqual(reply.chat_prompt, jinja2_render(CONVERSATION))

    def test_next_turns_reuse_the_cache(self):
        first = self.runner.chat(CONVERSATION, max_new_tokens=12, temperature=0)
        self.assertEqual(first.reused_tokens, 0)
        conversation = CONVERSATION + [{"role": "assistant", "content": first.text},
                                       {"role": "user", "content": "And then?"}]
        second = self.runner.chat(conversation, max_new_tokens=12, temperature=0)
        self.assertGreater(second.reused_tokens, len(first.prompt_token_ids) // 2)
        # The same answer as a fresh runner that prefills the whole conversation.
        fresh = kestrel.Runner(chat_program).chat(conversation, max_new_tokens=12, temperature=0)
        self.assertEqual(fresh.reused_tokens, 0)
        self.assertEqual(second.token_ids, fresh.token_ids)
        self.assertEqual(second.text, fresh.text)

    def test_stream_chat_pieces_join_to_the_reply(self):
        for seed in (1, 2):
            with self.subTest(seed=seed):
                self.runner.reset()
                reply = self.runner.chat(CONVERSATION, max_new_tokens=30, temperature=1.0, seed=seed)
                self.runner.reset()
                with self.runner.stream_chat(CONVERSATION, max_new_tokens=30, temperature=1.0, seed=seed) as stream:
                    pieces = list(stream)
                self.assertEqual("".join(pieces), reply.text)
                self.assertEqual(stream.result.token_ids, reply.token_ids)
                self.assertEqual(stream.result.chat_prompt, reply.chat_prompt)

    def test_errors(self):
        plain = kestrel.Runner(fixture.program)  # exported before the template was added
        with self.assertRaises(kestrel.NotFoundError) as caught:
            plain.chat(CONVERSATION)
        self.assertIn("no chat template", str(caught.exception))
        with self.assertRaises(kestrel.NotFoundError):
            plain.render_chat(CONVERSATION)
        with self.assertRaises(TypeError):
            self.runner.chat([{"role": "user", "content": object()}])
        with self.assertRaises(kestrel.Error):
            self.runner.chat([{"role": "user", "content": float("nan")}])
        with self.assertRaises(kestrel.CapacityError):
            self.runner.chat(CONVERSATION, max_new_tokens=1000)
        # The runner is still fine.
        self.assertEqual(len(self.runner.chat(CONVERSATION, max_new_tokens=3, ignore_eos=True).token_ids), 3)


if __name__ == "__main__":
    unittest.main()
