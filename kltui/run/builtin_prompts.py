"""The built-in prompt set: original text owned by the project, varied in topic and length."""

PROMPTS: tuple[str, ...] = (
    "Explain why bread dough needs time to rise before it is baked.",
    "Write a short story about a lighthouse keeper who finds a message in a bottle.",
    "Describe how a radix tree stores strings that share a common prefix.",
    "What are the main causes of the seasons on Earth?",
    "Summarize the history of the printing press in Europe in a few sentences.",
    "A train leaves the station at nine in the morning and travels at sixty miles per hour. "
    "A second train leaves two hours later at eighty miles per hour. When does the second "
    "train catch up, and how far from the station are they?",
    "List five practical tips for keeping a vegetable garden healthy during a dry summer.",
    "Why does ice float on water while most solids sink in their own liquid?",
    "Translate the idea of compound interest into a simple explanation for a child.",
    "Write a Python function that returns the longest common prefix of a list of strings, "
    "and explain its running time.",
    "Describe the water cycle, starting from the ocean and ending back at the ocean.",
    "What is the difference between a virus and a bacterium?",
    "Plan a three-day walking trip through a mountain valley, with a short note for each day.",
    "Explain what a hash table is and why lookups are usually fast.",
    "The old market square was quiet in the early morning. Merchants were still unpacking "
    "their carts, and the smell of fresh coffee drifted from the corner cafe. Continue the "
    "scene, introducing a stranger who arrives with an unusual request.",
    "Give a recipe for a simple tomato soup and explain what each step contributes.",
    "How do bees communicate the location of flowers to the rest of the hive?",
    "Explain the difference between latency and throughput using a highway as an analogy.",
    "Write a polite email asking a colleague to review a document by Friday.",
    "What happens inside a star when it runs out of hydrogen in its core?",
    "Describe three ways a city can reduce traffic congestion, with one drawback of each.",
    "Explain recursion to someone who has just learned what a function is.",
    "Why do we see lightning before we hear thunder?",
    "Tell the story of a small boat crossing a lake during a sudden storm, in the first person.",
    "In a library, books are arranged by subject, then by author. A visitor wants every book "
    "about river ecology written after the year two thousand. Describe how a librarian would "
    "help, and how a computer catalogue could answer the same question.",
    "What makes a good scientific experiment? Mention controls, variables and repetition.",
    "Explain how a refrigerator moves heat from inside the box to the room.",
    "Write four lines of a poem about the first snow of winter.",
    "Compare walking, cycling and taking the bus as ways to get to work.",
    "Describe how the floating point number 0.1 is stored and why sums of it can be inexact.",
    "What are tides, and why are there usually two high tides each day?",
    "Give advice to a student who is preparing for a difficult exam next month.",
    "Explain what a cache is in a computer and what happens on a cache miss.",
    "The committee met on Tuesday to discuss the new park. Some members wanted a playground, "
    "others wanted a quiet garden, and a few wanted to keep the field open for sports. "
    "Write the minutes of the meeting, including the decision they reached.",
    "How does a compass work, and why does it point north?",
    "Describe the taste and texture of a ripe peach to someone who has never eaten one.",
    "Explain why matrix multiplication in a different order can give slightly different "
    "floating point results.",
    "What were the main reasons people built canals in the eighteenth century?",
    "Write a dialogue between a baker and a customer who wants a cake for a surprise party.",
    "Explain the rules of chess for the knight and the bishop.",
    "Why is the sky blue during the day and red at sunset?",
    "Describe a quiet evening in a small fishing village.",
    "How should a team decide which bug to fix first when many are reported at once?",
    "Explain what an index in a database is and when it slows writes down.",
    "Give a step by step guide to planting a tree in a back garden.",
    "What is photosynthesis, and why does it matter for animals as well as plants?",
    "A farmer has a field shaped like a rectangle, forty metres by twenty five metres. She "
    "wants to fence it and plant grass seed that covers ten square metres per bag. How much "
    "fence and how many bags does she need? Show the working.",
    "Explain how a bicycle stays upright while it is moving.",
    "Write a short review of an imaginary science museum visited on a rainy afternoon.",
    "What is the difference between weather and climate?",
    "Describe how a key value cache speeds up text generation in a transformer model, and "
    "what could go wrong if a cached entry were restored for the wrong position.",
    "Write a bedtime story about a sleepy owl who cannot find the moon.",
)
