// Translates each line of standard input with a translation checkpoint (or a Marian directory):
//   translate DIR [BEAM] < sentences.txt
#include <iostream>
#include <string>
#include <vector>

#include <zoo/zoo.h>

int main(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << "usage: translate DIR [BEAM] < sentences.txt\n";
    return 2;
  }
  try {
    const zoo::Translator translator(argv[1]);
    std::vector<std::string> sources;
    for (std::string line; std::getline(std::cin, line);) sources.push_back(line);
    zoo::TranslationOptions options;
    options.beam_size = argc > 2 ? std::stoll(argv[2]) : 4;
    for (const auto& t : translator.translate(sources, options)) std::cout << t.text << "\n";
  } catch (const zoo::Error& e) {
    std::cerr << "translate: " << e.what() << "\n";
    return 1;
  }
}
