"""Two RAG apps written as a new citeline user would write them, from README.md and docs/testing.md.

- :mod:`tests.realapps.storage_desk`: a LangChain help desk whose context step returns a
  ``Prompt(messages, documents)`` wrapper (gold set ``storage_gold.yaml``);
- :mod:`tests.realapps.city_desk`: an openai-SDK city-services desk with chat-message context,
  prose or JSON answers and a hybrid (lexical + vector) retriever (gold set ``city_gold.yaml``).

Each has a correctly decorated request function and deliberately misplaced variants. Only the
model is a stand-in (no hosted LLM runs here): it reads the prompt it is sent and answers from it.
"""
