"""Claims: an answer split into claims as real answers write them (blocks, tables, attachment policy), its
citation markers, and the locators (URLs, sections, pages) its prose names."""
