// Classifies image files with a ViT checkpoint, or each line of standard input with a BERT one:
//   classify DIR [IMAGE...]
#include <iostream>
#include <string>
#include <vector>

#include <zoo/zoo.h>

int main(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << "usage: classify DIR [IMAGE...]   (texts: one per line of stdin)\n";
    return 2;
  }
  try {
    const zoo::Classifier classifier(argv[1]);
    std::vector<std::string> inputs(argv + 2, argv + argc);
    if (classifier.kind() == "text")
      for (std::string line; std::getline(std::cin, line);) inputs.push_back(line);
    const auto labels = classifier.kind() == "text" ? classifier.classify_texts(inputs, 1)
                                                    : classifier.classify_images(inputs, 1);
    for (size_t i = 0; i < inputs.size(); ++i)
      std::cout << labels[i][0].name << "\t" << labels[i][0].probability << "\t" << inputs[i] << "\n";
  } catch (const zoo::Error& e) {
    std::cerr << "classify: " << e.what() << "\n";
    return 1;
  }
}
