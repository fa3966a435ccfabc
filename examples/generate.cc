// Continues a prompt with a GPT checkpoint (or a Hugging Face GPT-2 directory), greedily:
//   generate DIR PROMPT [MAX_NEW_TOKENS]
// prints what `zoo generate --checkpoint DIR --prompt PROMPT --greedy` prints.
#include <iostream>
#include <string>

#include <zoo/zoo.h>

int main(int argc, char** argv) {
  if (argc < 3) {
    std::cerr << "usage: generate DIR PROMPT [MAX_NEW_TOKENS]\n";
    return 2;
  }
  try {
    const zoo::Generator generator(argv[1]);
    zoo::GenerationOptions options;
    options.greedy = true;
    options.max_new_tokens = argc > 3 ? std::stoll(argv[3]) : 64;
    // The text streams as it is produced; the prompt first, as zoo generate prints it.
    std::cout << argv[2] << std::flush;
    generator.generate({argv[2]}, options, [](size_t, const std::string& piece) {
      std::cout << piece << std::flush;
      return true;
    });
    std::cout << "\n";
  } catch (const zoo::Error& e) {
    std::cerr << "generate: " << e.what() << "\n";
    return 1;
  }
}
